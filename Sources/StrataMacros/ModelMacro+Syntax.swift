import SwiftSyntax

/// The marker attributes of one property declaration.
struct Markers {
    var primaryKey: AttributeSyntax?
    var indexed: AttributeSyntax?
    var transient: AttributeSyntax?
    var renamed: AttributeSyntax?
    var relationship: AttributeSyntax?

    init(_ attributes: AttributeListSyntax) {
        for case .attribute(let attribute) in attributes {
            // `@PrimaryKey` or `@Strata.PrimaryKey`.
            let name = attribute.attributeName.trimmedDescription.split(separator: ".").last.map(String.init)
            switch name {
            case "PrimaryKey": primaryKey = attribute
            case "Indexed": indexed = attribute
            case "Transient": transient = attribute
            case "Renamed": renamed = attribute
            case "Relationship": relationship = attribute
            default: break
            }
        }
    }
}

extension PatternBindingSyntax {
    /// Whether the binding is a computed property: accessors other than
    /// `willSet` and `didSet` observers.
    var isComputed: Bool {
        guard let accessors = accessorBlock?.accessors else { return false }
        return switch accessors {
        case .getter: true
        case .accessors(let accessors):
            accessors.contains {
                $0.accessorSpecifier.tokenKind != .keyword(.willSet)
                    && $0.accessorSpecifier.tokenKind != .keyword(.didSet)
            }
        }
    }
}

extension StoredType {
    /// Whether `type` is spelled as an optional (`T?` or `Optional<T>`),
    /// whatever `T` is.
    static func isOptionalSpelling(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) { return true }
        let name = type.as(IdentifierTypeSyntax.self)?.name.text ?? type.as(MemberTypeSyntax.self)?.name.text
        return name == "Optional"
    }
}

extension String {
    /// The identifier without the backticks of `` `default` ``.
    var trimmingBackticks: String {
        hasPrefix("`") && hasSuffix("`") && count > 1 ? String(dropFirst().dropLast()) : self
    }
}
