/// The full type of a field as changesets name it, in a canonical text:
/// `int`, `string?`, `link(Person)`, `list(int)`, `list(link(Person))`,
/// `embedded(Address)?`, `list(embedded(Address))`.
///
/// With a type name and a property path, the descriptor is a field's
/// identity across files: two files agree on a field when they agree on
/// its text, and the same name with another descriptor is another field.
/// A receiver that does not declare a field learns it from its descriptor
/// (``property(named:)``).
///
/// The grammar (`docs/FileFormat.md`, "Changesets (sync)"):
///
/// ```
/// descriptor = primitive ["?"] | "link(" name ")" | "embedded(" name ")" ["?"]
///            | "list(" (primitive | "link(" name ")" | "embedded(" name ")") ")"
/// primitive  = "bool" | "int" | "double" | "string" | "data" | "date" | "uuid" | "decimal"
/// ```
///
/// A link is optional by nature (null is "no target"), so its descriptor
/// has no `?`; a list is never null, so neither has its. A name is
/// everything between its opening parenthesis and the closing one(s) at
/// the end, so a type name may itself hold parentheses.
struct FieldDescriptor: Hashable, Sendable, CustomStringConvertible {
    /// The property type.
    var type: PropertyType
    /// Whether the field may hold null: always for a link, never for a list.
    var isOptional: Bool
    /// A link's target type or an embedded property's type; for a list of
    /// links or embedded objects, its elements'. Nil for the rest.
    var target: String?
    /// A list's element type; nil for any other field.
    var elementType: PropertyType?
    /// Whether this describes a list's elements rather than a field.
    private var isElement = false

    /// The descriptor of a property of a valid schema.
    init(_ property: Property) {
        type = property.type
        isOptional = property.storesNull
        target = property.target
        elementType = property.type == .list ? property.elementType : nil
    }

    /// The descriptor that `text` spells; nil when it is not one, or not
    /// in its canonical form (`link(Person)?`, `list(int)?`, `int ?`).
    init?(parsing text: String) {
        var shape = Substring(text)
        let optional = shape.last == "?"
        if optional { shape = shape.dropLast() }
        switch Self.split(shape) {
        case (let name, nil):
            guard let primitive = PropertyType(rawValue: String(name)), !primitive.isComposite else { return nil }
            self.init(type: primitive, isOptional: optional, target: nil, elementType: nil)
        case ("link", let target?) where !optional:
            self.init(type: .link, isOptional: true, target: String(target), elementType: nil)
        case ("embedded", let target?):
            self.init(type: .embedded, isOptional: optional, target: String(target), elementType: nil)
        case ("list", let element?) where !optional:
            switch Self.split(element) {
            case (let name, nil):
                guard let primitive = PropertyType(rawValue: String(name)), !primitive.isComposite else { return nil }
                self.init(type: .list, isOptional: false, target: nil, elementType: primitive)
            case ("link", let target?):
                self.init(type: .list, isOptional: false, target: String(target), elementType: .link)
            case ("embedded", let target?):
                self.init(type: .list, isOptional: false, target: String(target), elementType: .embedded)
            default:
                return nil
            }
        default:
            return nil
        }
    }

    private init(type: PropertyType, isOptional: Bool, target: String?, elementType: PropertyType?) {
        self.type = type
        self.isOptional = isOptional
        self.target = target
        self.elementType = elementType
    }

    /// `text` as a name and, when it is written `name(argument)`, the
    /// argument: what lies between the first `(` and the last `)`. A
    /// parenthesis that is not closed at the end, or that holds nothing,
    /// leaves no name (`""`), which no descriptor has.
    private static func split(_ text: Substring) -> (name: Substring, argument: Substring?) {
        guard let open = text.firstIndex(of: "(") else { return (text, nil) }
        let argument = text[text.index(after: open)...].dropLast()
        guard text.last == ")", !argument.isEmpty else { return ("", nil) }
        return (text[..<open], argument)
    }

    /// The canonical text.
    var description: String {
        let shape: String
        switch type {
        case .link, .embedded: shape = "\(type)(\(target ?? ""))"
        case .list:
            switch elementType {
            case .link?, .embedded?: shape = "list(\(elementType!)(\(target ?? "")))"
            case let element?: shape = "list(\(element))"
            case nil: shape = "list()"
            }
        default: shape = type.rawValue
        }
        return isOptional && type != .link ? shape + "?" : shape
    }

    /// A property of this descriptor: how a receiver keeps a field its
    /// schema does not declare. Defaults, indexes and delete rules are not
    /// part of a field's identity and take their defaults.
    func property(named name: String) -> Property {
        Property(name, type, optional: isOptional, target: target, elementType: elementType)
    }

    /// The descriptor text of a property of a valid schema.
    static func descriptor(of property: Property) -> String {
        FieldDescriptor(property).description
    }

    /// The property named `name` that `descriptor` describes; nil when the
    /// text is not a descriptor.
    static func property(named name: String, descriptor: String) -> Property? {
        FieldDescriptor(parsing: descriptor)?.property(named: name)
    }

    /// Whether `value` may be a value of the field: null when it is
    /// optional, else a value of its type (a link's key an int, string or
    /// uuid; a list's elements of its element type). An embedded object's
    /// fields are not checked: their types are its type's.
    func admits(_ value: Value) -> Bool {
        switch value {
        case .null: return isOptional
        case .link(let key): return type == .link && StoredKind(of: key)?.canBePrimaryKey == true
        case .list(let elements):
            guard type == .list, let elementType else { return false }
            var element = FieldDescriptor(type: elementType, isOptional: false, target: target, elementType: nil)
            element.isElement = true
            return elements.allSatisfy { element.admits($0) }
        case .object: return type == .embedded
        // An embedded field carries its object's life (``WireField``).
        case .int(let life) where type == .embedded: return life >= 0 && !isElement
        default: return value.fits(type, optional: isOptional)
        }
    }
}
