/// How a changeset names a property's type: its descriptor.
enum FieldDescriptor {
    /// The descriptor of `property`: its type, its target or element
    /// type, and a `?` when optional (`int`, `string?`, `link(Person)`,
    /// `list(int)`, `list(link(Person))`, `embedded(Address)`).
    static func descriptor(of property: Property) -> String {
        let base: String
        switch property.type {
        case .link: base = "link(\(property.target ?? ""))"
        case .embedded: base = "embedded(\(property.target ?? ""))"
        case .list:
            let element = property.elementType ?? .int
            let inner =
                element == .link || element == .embedded
                ? "\(element.rawValue)(\(property.target ?? ""))" : element.rawValue
            base = "list(\(inner))"
        default: base = property.type.rawValue
        }
        // A link is null while its target is absent, whatever it declares.
        return property.isOptional && property.type != .list && property.type != .link ? base + "?" : base
    }

    /// The property a descriptor describes, named `name`; nil for a
    /// descriptor this version does not know.
    static func property(named name: String, descriptor: String) -> Property? {
        var text = Substring(descriptor)
        let optional = text.hasSuffix("?")
        if optional { text = text.dropLast() }
        func target(_ prefix: String) -> String? {
            guard text.hasPrefix(prefix + "("), text.hasSuffix(")") else { return nil }
            return String(text.dropFirst(prefix.count + 1).dropLast())
        }
        if let linked = target("link") { return Property(name, .link, optional: true, target: linked) }
        if let embedded = target("embedded") { return Property(name, .embedded, optional: optional, target: embedded) }
        if let element = target("list") {
            if element.hasPrefix("link("), element.hasSuffix(")") {
                return Property(name, .list, target: String(element.dropFirst(5).dropLast()), elementType: .link)
            }
            if element.hasPrefix("embedded("), element.hasSuffix(")") {
                return Property(name, .list, target: String(element.dropFirst(9).dropLast()), elementType: .embedded)
            }
            guard let type = PropertyType(rawValue: element), !type.isComposite else { return nil }
            return Property(name, .list, elementType: type)
        }
        guard let type = PropertyType(rawValue: String(text)), !type.isComposite else { return nil }
        return Property(name, type, optional: optional)
    }
}
