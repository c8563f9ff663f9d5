/// The errors of reading and writing objects: names the schema does not
/// have, values that do not fit, keys that are taken or missing, deletes a
/// rule refuses. Each family's message is written here, once.
extension StrataError {
    /// A type name the schema of the file does not contain; `known` lists
    /// the names it does.
    static func unknownType(_ name: String, known: String, path: String) -> StrataError {
        StrataError(
            .unknownObjectType,
            summary: "The schema of \(path) has no object type '\(name)'. Its types are: \(known).",
            path: path, typeName: name)
    }

    /// A property name that the type (or, with `owner`, the embedded type
    /// given for `owner`) does not contain; `known` lists the names it does.
    static func unknownProperty(
        typeName: String, property: String, known: String, embeddedIn owner: String? = nil, path: String
    ) -> StrataError {
        let place = owner.map { "given for '\($0)' in \(path)" } ?? "in \(path)"
        return StrataError(
            .unknownProperty,
            summary:
                "\(owner == nil ? "Object" : "Embedded") type '\(typeName)' has no property '\(property)' (\(place)). Its properties are: \(known).",
            nothingWritten: owner != nil, path: path, typeName: typeName, property: property)
    }

    /// A key path of a model query (`operation`) that names a computed or
    /// transient property rather than a stored one.
    static func notAStoredProperty(
        _ named: String, operation: String, model: String, typeName: String, known: String, path: String
    ) -> StrataError {
        StrataError(
            .unknownProperty,
            summary:
                "\(operation) was given \(named), which is not a stored property of the model \(model) (stored as '\(typeName)' in \(path)): it is computed or transient. Its stored properties are: \(known).",
            remedy: "Test a computed value in a closure passed to filter(_:).", path: path, typeName: typeName)
    }

    /// An insert with a primary key that another object has.
    static func duplicatePrimaryKey(typeName: String, key: String, path: String) -> StrataError {
        StrataError(
            .duplicatePrimaryKey,
            summary: "An object of type '\(typeName)' with primary key \(key) already exists in \(path).",
            remedy: "Use upsert to replace it or update to change it.", path: path, typeName: typeName, key: key)
    }

    /// An update of an object that does not exist.
    static func objectNotFound(typeName: String, key: String, path: String) -> StrataError {
        StrataError(
            .objectNotFound, summary: "There is no '\(typeName)' with key \(key) in \(path) to update.",
            remedy: "Use insert or upsert to create it.", path: path, typeName: typeName, key: key)
    }

    /// A primary key that encodes to more bytes than LMDB takes in a key.
    static func keyTooLarge(typeName: String, size: Int, limit: Int, path: String) -> StrataError {
        StrataError(
            .keyTooLarge,
            summary:
                "The primary key of this '\(typeName)' encodes to \(size) bytes; LMDB allows at most \(limit) (in \(path)).",
            remedy: "Use a shorter key.", nothingWritten: true, path: path, typeName: typeName)
    }

    /// A required property without a default that was given no value (for
    /// `owner`, when the property is one of an embedded object).
    static func missingValue(typeName: String, property: String, embeddedIn owner: String? = nil, path: String)
        -> StrataError
    {
        StrataError(
            .missingValue,
            summary:
                "Property '\(typeName).\(property)' is required and has no default, but no value was given\(owner.map { " for '\($0)'" } ?? "") (in \(path)).",
            nothingWritten: true, path: path, typeName: typeName, property: property)
    }

    /// A value that the property cannot hold: `expected` is its type as
    /// the schema says it, `given` the value (nil for null).
    static func valueDoesNotFit(
        typeName: String, property: String, expected: String, given: String?, path: String
    ) -> StrataError {
        let summary =
            given.map { "Property '\(typeName).\(property)' is \(expected), but \($0) was given (in \(path))." }
            ?? "Property '\(typeName).\(property)' is required (\(expected)) but null was given (in \(path))."
        return StrataError(
            .invalidValue, summary: summary, nothingWritten: true, path: path, typeName: typeName, property: property)
    }

    /// A primary key value of the wrong type.
    static func primaryKeyDoesNotFit(
        typeName: String, property: String, expected: String, given: String, nothingWritten: Bool = true,
        path: String
    ) -> StrataError {
        StrataError(
            .invalidValue,
            summary: "The primary key '\(typeName).\(property)' is \(expected), but \(given) was given (in \(path)).",
            nothingWritten: nothingWritten, path: path, typeName: typeName, property: property, key: given)
    }

    /// A link from an object to one that does not exist.
    static func danglingLink(
        typeName: String, property: String, key: String, target: String, targetKey: String, remedy: String,
        nothingWritten: Bool, path: String
    ) -> StrataError {
        StrataError(
            .invalidValue,
            summary:
                "'\(typeName).\(property)' of the '\(typeName)' \(key) links to the '\(target)' \(targetKey), which does not exist (in \(path)).",
            remedy: remedy, nothingWritten: nothingWritten, path: path, typeName: typeName, property: property,
            key: key)
    }

    /// A property used as a link that is not one: `toOne` when a to-one
    /// link was needed, else any link or list of links.
    static func notALink(typeName: String, property: String, toOne: Bool, path: String) -> StrataError {
        StrataError(
            .invalidValue,
            summary:
                toOne
                ? "'\(typeName).\(property)' is not a to-one link (in \(path))."
                : "'\(typeName).\(property)' is not a link or a list of links (in \(path)).",
            remedy: toOne ? "Read a list's elements with their keys." : "Only links have backlinks.", path: path,
            typeName: typeName, property: property)
    }

    /// A model value used to name an object (`action`: "update", "delete")
    /// of a type without a primary key.
    static func noPrimaryKey(typeName: String, model: String, action: String, remedy: String, path: String)
        -> StrataError
    {
        StrataError(
            .invalidValue,
            summary:
                "'\(typeName)' has no primary key, so a \(model) value does not say which object to \(action) (in \(path)).",
            remedy: remedy, path: path, typeName: typeName)
    }

    /// Any other value that does not fit where it was given: `problem`
    /// says which and why, the fields name the type, property and key.
    static func invalidValue(
        _ problem: String, typeName: String? = nil, property: String? = nil, key: String? = nil,
        remedy: String? = nil, nothingWritten: Bool = false, path: String
    ) -> StrataError {
        StrataError(
            .invalidValue, summary: problem, remedy: remedy, nothingWritten: nothingWritten, path: path,
            typeName: typeName, property: property, key: key)
    }

    /// A stored raw value, `raw`, that no case of the enum `enumName` of
    /// the model `model`'s property `property` has.
    static func unknownEnumValue(
        _ raw: Value, enumName: String, model: String, typeName: String, property: String, key: String, path: String
    ) -> StrataError {
        StrataError(
            .unknownEnumValue,
            summary:
                "The '\(typeName)' object \(key) in \(path) stores \(raw) for '\(property)', a raw value that no case of \(enumName) has (a newer version of the app may have added it), so the model \(model) cannot read it.",
            remedy:
                "Declare `static var unknownCase: \(enumName)? { ... }` in \(enumName) to read unknown values as a case of your choice (writing the object back keeps the stored value), or read the object with the dynamic API.",
            path: path, typeName: typeName, property: property, key: key)
    }

    /// A delete that a deny rule refuses: the object `key` of `typeName`
    /// (or, without a key, all of its objects), and the objects that link
    /// to it, each item naming the link. `cascades`: the delete of the
    /// object reaches others through cascade rules.
    static func deleteDenied(
        typeName: String, key: String?, cascades: Bool = false, linking: [String], path: String
    ) -> StrataError {
        let summary =
            if let key {
                "The '\(typeName)' \(key) cannot be deleted from \(path): objects link to \(cascades ? "it or to objects its delete cascades to" : "it") under a deny rule"
            } else {
                "The objects of '\(typeName)' cannot all be deleted from \(path): objects link to them or to objects their delete cascades to under a deny rule"
            }
        return StrataError(
            .deleteDenied, summary: summary, items: linking, remedy: "Unlink or delete them first.",
            nothingWritten: true, path: path, typeName: typeName, key: key)
    }

    /// At most `limit` of `lines`, and a last line that counts the rest.
    static func listed(_ lines: [String], limit: Int = 20) -> [String] {
        lines.count > limit ? Array(lines.prefix(limit)) + ["and \(lines.count - limit) more"] : lines
    }
}
