import Foundation

/// A schema at one schema version, as JSON: what an app keeps in its
/// repository for every version it ships, so that tests can build a file
/// exactly as that version wrote it (see `StrataTesting`) and `strata plan`
/// can tell what opening would do.
///
/// ```swift
/// let data = SchemaSnapshot(schemaVersion: 3, schema: schema).jsonData()
/// try data.write(to: URL(fileURLWithPath: "Schemas/v3.json"))
/// let v3 = try SchemaSnapshot(jsonData: Data(contentsOf: url))
/// ```
///
/// The format (docs/FileFormat.md, "Schema snapshots"):
///
/// ```json
/// {"format": "strata-schema", "formatVersion": 1, "schemaVersion": 3,
///  "schema": {"objectSchemas": [{"name": "Person", "primaryKey": "id",
///    "properties": [{"name": "id", "type": "int", "isOptional": false, "isIndexed": false}]}]}}
/// ```
public struct SchemaSnapshot: Hashable, Sendable, Codable {
    /// The marker that tells a snapshot from other JSON.
    public static let format = "strata-schema"
    /// The newest snapshot format this version of Strata reads and writes.
    public static let currentFormatVersion = 1

    /// The schema version the schema belongs to.
    public var schemaVersion: UInt64
    /// The schema.
    public var schema: Schema

    /// Creates a snapshot.
    public init(schemaVersion: UInt64, schema: Schema) {
        self.schemaVersion = schemaVersion
        self.schema = schema
    }

    private enum CodingKeys: String, CodingKey {
        case format, formatVersion, schemaVersion, schema
    }

    /// Reads a snapshot from the JSON that ``jsonData()`` writes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decodeIfPresent(String.self, forKey: .format)
        guard format == SchemaSnapshot.format else {
            throw DecodingError.dataCorruptedError(
                forKey: .format, in: container, debugDescription: "\"format\" must be \"\(SchemaSnapshot.format)\"")
        }
        let formatVersion = try container.decode(Int.self, forKey: .formatVersion)
        guard formatVersion <= SchemaSnapshot.currentFormatVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .formatVersion, in: container,
                debugDescription:
                    "snapshot format \(formatVersion) is newer than the format \(SchemaSnapshot.currentFormatVersion) this version of Strata reads"
            )
        }
        schemaVersion = try container.decode(UInt64.self, forKey: .schemaVersion)
        schema = try container.decode(Schema.self, forKey: .schema)
    }

    /// Writes the snapshot's JSON form (see ``jsonData()``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(SchemaSnapshot.format, forKey: .format)
        try container.encode(SchemaSnapshot.currentFormatVersion, forKey: .formatVersion)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(schema, forKey: .schema)
    }

    /// Reads a snapshot and checks its schema.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``
    ///   when the data is not a snapshot, or its schema breaks a rule.
    public init(jsonData: Data) throws {
        do {
            self = try JSONDecoder().decode(SchemaSnapshot.self, from: jsonData)
        } catch let error as DecodingError {
            throw StrataError.notASnapshot(SchemaSnapshot.describe(error))
        } catch {
            throw StrataError.notASnapshot("\(error)")
        }
        let problems = schema.validationProblems()
        guard problems.isEmpty else {
            throw StrataError.invalidSchema(problems, snapshotVersion: schemaVersion)
        }
    }

    /// The snapshot as JSON: keys sorted and indented, so that snapshots
    /// kept in a repository diff well.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        // Plain structs of strings and numbers always encode.
        return try! encoder.encode(self)
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            if case .keyNotFound(let key, _) = error {
                return "\"\(([path, key.stringValue].filter { !$0.isEmpty }).joined(separator: "."))\" is missing"
            }
            return (path.isEmpty ? "" : "at \"\(path)\": ") + context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }
}

extension SchemaSnapshot {
    /// Reads the snapshot in a file, e.g. one kept per shipped version in
    /// the app's repository.
    ///
    /// - Throws: ``StrataError``: a file that cannot be read (code
    ///   ``StrataError/Code/fileSystem``), or is not a valid snapshot
    ///   (``StrataError/Code/invalidSchema``).
    public init(contentsOf url: URL) throws {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw StrataError.unreadableFile(
                path: url.path, reason: error.localizedDescription, what: "schema snapshot")
        }
        try self.init(jsonData: data)
    }
}

extension Schema {
    /// Loads the schema of a snapshot (see ``SchemaSnapshot``).
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``.
    public init(snapshot jsonData: Data) throws {
        self = try SchemaSnapshot(jsonData: jsonData).schema
    }

    /// The schema as a JSON snapshot at `schemaVersion` (see ``SchemaSnapshot``).
    public func snapshot(schemaVersion: UInt64) -> Data {
        SchemaSnapshot(schemaVersion: schemaVersion, schema: self).jsonData()
    }
}
