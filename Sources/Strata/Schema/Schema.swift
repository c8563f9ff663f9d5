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
    /// only `bool`, `int`, `string`, `date` and `uuid` properties can be indexed.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``,
    ///   whose message lists each problem on a line of its own.
    public func validate() throws {
        let problems = validationProblems()
        guard problems.isEmpty else {
            throw StrataError(
                .invalidSchema, "The schema is invalid:\n" + problems.map { "- " + $0 }.joined(separator: "\n"))
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
            if let value = property.defaultValue,
                !value.coerced(to: property.type).fits(property.type, optional: property.isOptional)
            {
                let found = value.propertyType.map { "\($0)" } ?? "null"
                problems.append(
                    "Property '\(qualified)' has a default value \(value) of type \(found); it must be \(property.typeDescription)."
                )
            }
            if property.isIndexed && !property.type.canBeIndexed {
                problems.append(
                    "Property '\(qualified)' of type \(property.type) cannot be indexed; only bool, int, string, date and uuid properties can."
                )
            }
        }
        if let key = primaryKey {
            if let property = self[property: key] {
                if !property.type.canBePrimaryKey {
                    problems.append(
                        "Primary key '\(name).\(key)' is of type \(property.type); a primary key must be int, string or uuid."
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
