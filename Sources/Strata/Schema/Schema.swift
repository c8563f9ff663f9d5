/// The object types a database holds.
///
/// ```swift
/// let schema = Schema([
///     ObjectSchema("Person", primaryKey: "id") {
///         Property("id", .int)
///         Property("name", .string)
///     },
/// ])
/// ```
///
/// A schema is checked when a database is opened with it, or by
/// ``validate()``.
public struct Schema: Hashable, Sendable, Codable {
    /// The object types, in the order given.
    public var objectSchemas: [ObjectSchema]

    /// Creates a schema from its object types.
    public init(_ objectSchemas: [ObjectSchema]) {
        self.objectSchemas = objectSchemas
    }

    /// The JSON key of snapshots, spelled out so that renaming the Swift
    /// property never changes the file format.
    private enum CodingKeys: String, CodingKey {
        case objectSchemas
    }

    /// The object type named `name`, if there is one.
    public subscript(name: String) -> ObjectSchema? {
        objectSchemas.first { $0.name == name }
    }

    /// The names of the object types, sorted.
    public var typeNames: [String] { objectSchemas.map(\.name).sorted() }

    /// Checks every rule a schema must follow and reports every problem at once.
    ///
    /// The rules: names are non-empty, at most 255 UTF-8 bytes, do not
    /// start with `__` (reserved for Strata) and are unique (types within
    /// the schema, properties within their type); every type has at least
    /// one property; a primary key names one of its type's properties, is
    /// an `int`, `string` or `uuid`, and is not optional; a default value
    /// has the property's type and is null only for an optional property;
    /// only `bool`, `int`, `string`, `date`, `uuid` and `decimal` properties can be indexed.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``,
    ///   whose message lists each problem on a line of its own.
    public func validate() throws {
        let problems = validationProblems()
        guard problems.isEmpty else {
            throw StrataError.invalidSchema(problems)
        }
    }

    /// Every rule the schema breaks, one sentence each.
    func validationProblems() -> [String] {
        var problems: [String] = []
        var seenTypes: Set<String> = []
        for type in objectSchemas {
            if let problem = Schema.nameProblem(
                type.name, label: "Object type '\(type.name)'", empty: "An object type has an empty name.")
            {
                problems.append(problem)
            }
            if !seenTypes.insert(type.name).inserted {
                problems.append("Object type '\(type.name)' is declared more than once.")
            }
            problems += type.validationProblems()
            problems += relationshipProblems(of: type)
        }
        problems += embeddingCycles()
        return problems
    }

    /// The rules of links, lists and embedded objects: a target that exists
    /// and is of the right kind, always-optional links, lists of a type a
    /// list may hold, delete rules only where they apply, and embedded
    /// types without keys, indexes or links.
    private func relationshipProblems(of type: ObjectSchema) -> [String] {
        var problems: [String] = []
        if type.isEmbedded {
            if let key = type.primaryKey {
                problems.append(
                    "Embedded type '\(type.name)' has a primary key '\(key)'; embedded objects are identified by their owner and have none."
                )
            }
            for property in type.properties where property.isIndexed {
                problems.append(
                    "Property '\(type.name).\(property.name)' of embedded type '\(type.name)' is indexed; embedded objects have no indexes."
                )
            }
            for property in type.properties where property.isLink {
                problems.append(
                    "Property '\(type.name).\(property.name)' of embedded type '\(type.name)' is a link; embedded objects cannot hold links (put the link on the owning type)."
                )
            }
        }
        for property in type.properties {
            let qualified = "\(type.name).\(property.name)"
            let kind = property.type == .list ? property.elementType : property.type
            if property.type == .list {
                guard let element = property.elementType else {
                    problems.append("List '\(qualified)' has no element type.")
                    continue
                }
                if !element.canBeListElement {
                    problems.append(
                        "List '\(qualified)' holds lists; a list holds primitive values, links or embedded objects.")
                }
                if property.isOptional {
                    problems.append(
                        "List '\(qualified)' is optional; a list is never null, its empty value is the empty list.")
                }
            } else if property.elementType != nil {
                problems.append("Property '\(qualified)' is not a list but has an element type.")
            }
            if property.type.isComposite && property.defaultValue != nil {
                problems.append(
                    "Property '\(qualified)' of type \(property.shapeDescription) has a default value; links, lists and embedded objects take none."
                )
            }
            switch kind {
            case .link?, .embedded?:
                guard let target = property.target else {
                    problems.append(
                        "Property '\(qualified)' of type \(property.shapeDescription) names no target type.")
                    break
                }
                guard let targetType = self[target] else {
                    problems.append(
                        "Property '\(qualified)' of type \(property.shapeDescription) names '\(target)', which is not in the schema. Its types are: \(typeNames.joined(separator: ", "))."
                    )
                    break
                }
                if kind == .link && targetType.isEmbedded {
                    problems.append(
                        "Property '\(qualified)' links to '\(target)', an embedded type; links point to top-level types. Use Property.embedded to hold an embedded object."
                    )
                }
                if kind == .embedded && !targetType.isEmbedded {
                    problems.append(
                        "Property '\(qualified)' embeds '\(target)', a top-level type; declare '\(target)' with embedded: true, or link to it with Property.link."
                    )
                }
            default:
                if property.target != nil {
                    problems.append(
                        "Property '\(qualified)' of type \(property.shapeDescription) names a target type; only links and embedded objects have one."
                    )
                }
            }
            if property.type == .link && !property.isOptional {
                problems.append(
                    "Link '\(qualified)' is required; links are always optional (null when there is no target).")
            }
            if !property.isLink && property.deleteRule != .nullify {
                problems.append(
                    "Property '\(qualified)' has the delete rule \(property.deleteRule), but only links have delete rules."
                )
            }
            if property.type == .list && property.elementType == .link && property.deleteRule == .cascade {
                problems.append(
                    "List '\(qualified)' has the delete rule cascade; deleting one listed object cannot delete the list's owner. Use nullify (the object drops out of the list) or deny, or a to-one link with cascade from the other side."
                )
            }
        }
        return problems
    }

    /// Embedded types that contain themselves, directly or through others:
    /// an object of such a type could never be written whole.
    private func embeddingCycles() -> [String] {
        var problems: [String] = []
        let embedded = Dictionary(objectSchemas.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for start in objectSchemas where start.isEmbedded {
            var stack = [(start.name, [start.name])]
            var seen: Set<String> = []
            while let (name, trail) = stack.popLast() {
                guard let type = embedded[name], seen.insert(name).inserted else { continue }
                for property in type.properties where property.isEmbedding {
                    guard let target = property.target else { continue }
                    if target == start.name {
                        problems.append(
                            "Embedded type '\(start.name)' contains itself (\((trail + [target]).joined(separator: " → "))); an embedded object cannot hold an object of its own type."
                        )
                    } else {
                        stack.append((target, trail + [target]))
                    }
                }
            }
        }
        return problems
    }

    static func nameProblem(_ name: String, label: @autoclosure () -> String, empty: @autoclosure () -> String)
        -> String?
    {
        if name.isEmpty { return empty() }
        if name.hasPrefix("__") { return "\(label()) starts with '__', which is reserved for Strata." }
        if name.utf8.count > 255 { return "\(label()) has a name longer than 255 bytes." }
        return nil
    }
}

extension ObjectSchema {
    func validationProblems() -> [String] {
        var problems: [String] = []
        if properties.isEmpty { problems.append("Object type '\(name)' has no properties.") }
        var seen: Set<String> = []
        for property in properties {
            let qualified = "\(name).\(property.name)"
            if let problem = Schema.nameProblem(
                property.name, label: "Property '\(qualified)'", empty: "A property of '\(name)' has an empty name.")
            {
                problems.append(problem)
            }
            if !seen.insert(property.name).inserted {
                problems.append("Property '\(qualified)' is declared more than once.")
            }
            if let value = property.defaultValue, !property.type.isComposite,
                !value.coerced(to: property.type).fits(property.type, optional: property.isOptional)
            {
                let found = value.propertyType.map { "\($0)" } ?? "null"
                problems.append(
                    "Property '\(qualified)' has a default value \(value) of type \(found); it must be \(property.typeDescription)."
                )
            }
            if property.isIndexed && !property.type.canBeIndexed {
                problems.append(
                    "Property '\(qualified)' of type \(property.shapeDescription) cannot be indexed; only \(PropertyType.sentence(PropertyType.primitives.filter(\.canBeIndexed), "and")) properties can."
                )
            }
        }
        if let key = primaryKey {
            if let property = self[property: key] {
                if !property.type.canBePrimaryKey {
                    problems.append(
                        "Primary key '\(name).\(key)' is of type \(property.type); a primary key must be \(PropertyType.sentence(PropertyType.primitives.filter(\.canBePrimaryKey), "or"))."
                    )
                }
                if property.isOptional {
                    problems.append("Primary key '\(name).\(key)' is optional; a primary key must be required.")
                }
            } else {
                problems.append("Primary key '\(key)' of '\(name)' is not one of its properties.")
            }
        }
        return problems
    }
}
