import Strata

/// Everything a database file holds, as plain values: every object type
/// (types the file keeps without a schema naming them included), every
/// object's key, stored properties and effective schema version.
///
/// Made to assert that "nothing changed": dump a file before an operation
/// that must fail, dump it after, and compare the dumps or their
/// ``digest``.
///
/// ```swift
/// let before = try DatabaseDump(path: path)
/// #expect(throws: StrataError.self) { try Database(configuration: failingMigration) }
/// #expect(try DatabaseDump(path: path) == before)
/// ```
public struct DatabaseDump: Hashable, Sendable, CustomStringConvertible {
    /// One stored object.
    public struct Object: Hashable, Sendable {
        /// Its primary key, or its automatic id.
        public var key: Value
        /// The schema version under which it was last written.
        public var schemaVersion: UInt64
        /// Its properties by name, as the file's schema reads them.
        public var values: [String: Value]
    }

    /// The objects of one type, in key order.
    public struct TypeContents: Hashable, Sendable {
        /// The type's name.
        public var name: String
        /// Its schema as the file records it.
        public var schema: ObjectSchema
        /// Its objects, in key order.
        public var objects: [Object]
    }

    /// The schema version recorded in the file.
    public var fileSchemaVersion: UInt64
    /// Every type, sorted by name.
    public var types: [TypeContents]

    /// Dumps the file at `path`, read-only, through the file's own schema.
    ///
    /// - Throws: ``StrataError`` when the file does not exist, is not a
    ///   Strata file, or is damaged.
    public init(path: String) throws {
        let db = try Database(inspecting: path)
        defer { db.close() }
        try self.init(db)
    }

    /// Dumps an open database: the types its transactions can read.
    ///
    /// - Throws: ``StrataError`` for a damaged record.
    public init(_ db: Database) throws {
        fileSchemaVersion = db.fileSchemaVersion
        types = try db.read { tx in
            try tx.typeNames.map { name in
                let schema = try tx.objectSchema(name)
                let objects = try tx.objects(name).map {
                    Object(key: $0.primaryKey, schemaVersion: $0.schemaVersion, values: $0.values)
                }
                return TypeContents(name: name, schema: schema, objects: objects)
            }
        }
    }

    /// The dump as text: one line per type, then one line per object with
    /// its key, effective version and properties sorted by name.
    public var description: String {
        var lines = ["file schema version \(fileSchemaVersion)"]
        for type in types {
            let properties = type.schema.properties.map { "\($0.name): \($0.type)\($0.isOptional ? "?" : "")" }
            lines.append("type \(type.name) (\(properties.joined(separator: ", "))), \(type.objects.count) objects")
            for object in type.objects {
                let values = object.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                lines.append("  \(object.key) v\(object.schemaVersion): \(values.joined(separator: ", "))")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A 128-bit digest of ``description``, as 32 hexadecimal digits: equal
    /// dumps have equal digests. Two FNV-1a hashes with different seeds;
    /// not a cryptographic hash, made to compare files in tests.
    public var digest: String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in description.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second ^= second >> 29
        }
        return [first, second].map { String($0, radix: 16).leftPadded(to: 16) }.joined()
    }

    /// What differs from `other`, one line each (empty when the dumps are
    /// equal): for messages of failed assertions.
    public func differences(from other: DatabaseDump) -> [String] {
        let mine = description.split(separator: "\n")
        let theirs = other.description.split(separator: "\n")
        let removed = Set(theirs).subtracting(mine).sorted().map { "- \($0)" }
        let added = Set(mine).subtracting(theirs).sorted().map { "+ \($0)" }
        return removed + added
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
