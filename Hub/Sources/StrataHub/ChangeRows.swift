import Foundation
import NIOCore
@_spi(Hub) import Strata

/// A pushed changeset as the rows the merge writes: objects and field
/// registers, named by type name, encoded key and path.
///
/// A field inside an embedded object is a register whose path names its
/// holders and the lives of theirs it belongs to (`home/3/street`:
/// `street` of the object `home` held in its life 3), so that the fields
/// of two lives of one embedded object are two registers and the merge
/// needs no rule but "higher rank, then later stamp, wins": a holder's
/// rank is its life, every other field's 0 (docs/Hub.md, "Storage").
struct ChangeRows {
    struct Object {
        var type: String
        var key: ByteBuffer
        var causalLength: Int64
        var time: Int64
        var origin: UUID
        var writerVersion: Int64
    }

    struct Field {
        var type: String
        var key: ByteBuffer
        var path: String
        var descriptor: String
        var rank: Int64
        var value: ByteBuffer
        var time: Int64
        var origin: UUID
        var causalLength: Int64
        /// The holder's path and the life this field belongs to; nil at the
        /// top of the object.
        var parent: (path: String, life: Int64)?
        /// The number of holders above it.
        var depth: Int
    }

    var objects: [Object] = []
    /// By depth: top-level fields first, then one level into embedded
    /// objects, and so on.
    var fields: [[Field]] = []
    /// The holders (type, key, path) the changeset names, whose older
    /// lives' registers the merge removes.
    var holders: [(type: String, key: ByteBuffer, path: String)] = []
    /// Field changes in all.
    var fieldCount: Int { fields.reduce(0) { $0 + $1.count } }

    struct RegistryKey: Hashable {
        var type: String
        var path: String
    }

    /// One object: its type and encoded key.
    struct ObjectRef: Hashable {
        var type: String
        var key: ByteBuffer

        /// As a push's answer names it: the key as text.
        var refusal: HubRefusedObject {
            get throws {
                let value = try ChangesetCodec.value(from: Array(key.readableBytesView))
                let text =
                    switch value {
                    case .string(let string): string
                    case .int(let number): String(number)
                    case .uuid(let uuid): uuid.uuidString
                    default: "\(value)"
                    }
                return HubRefusedObject(type: type, key: text)
            }
        }
    }

    /// The rows without those of the objects `refused`.
    func without(_ refused: Set<ObjectRef>) -> ChangeRows {
        guard !refused.isEmpty else { return self }
        var kept = self
        kept.objects.removeAll { refused.contains(ObjectRef(type: $0.type, key: $0.key)) }
        kept.fields = fields.map { level in level.filter { !refused.contains(ObjectRef(type: $0.type, key: $0.key)) } }
        kept.holders.removeAll { refused.contains(ObjectRef(type: $0.type, key: $0.key)) }
        return kept
    }

    /// A field the schema registry refused: its descriptor for its path.
    struct Refused: Hashable {
        var type: String
        var path: String
        var descriptor: String
    }

    /// The separator of a register's path: names and lives never hold it
    /// (a name holding it is refused).
    static let separator: Character = "/"

    /// Every field `content` names, by type and dotted path
    /// (`home.street`), with its descriptors (two fields of one name and
    /// two descriptors are two fields to a file; the hub refuses one).
    static func registry(of content: ChangesetContent) -> [RegistryKey: Set<String>] {
        var dotted: [String] = []
        var result: [RegistryKey: Set<String>] = [:]
        for field in content.fields {
            dotted.append(field.parent.map { "\(dotted[$0]).\(field.path)" } ?? field.path)
            result[RegistryKey(type: content.types[field.type].name, path: dotted.last!), default: []].insert(
                field.descriptor)
        }
        return result
    }

    /// The rows of `content`, leaving out the fields of `refused`, those
    /// inside them too, and the objects of
    /// `refusedTypes`.
    init(_ content: ChangesetContent, refused: Set<Refused> = [], refusedTypes: Set<String> = []) throws {
        let origins = content.origins.map(\.uuid)
        // Every wire field's dotted path, once.
        var dotted: [String] = []
        dotted.reserveCapacity(content.fields.count)
        for field in content.fields {
            guard !field.path.contains(Self.separator), !field.path.isEmpty else {
                throw HubError.invalidChangeset(
                    "The field name '\(field.path)' is empty or holds '\(Self.separator)', which the hub cannot store.")
            }
            dotted.append(field.parent.map { "\(dotted[$0]).\(field.path)" } ?? field.path)
        }
        let isHolder = content.fields.map(\.isEmbedded)
        for entry in content.entries {
            let typeName = content.types[entry.type].name
            guard !refusedTypes.contains(typeName) else { continue }
            let key = ByteBuffer(bytes: ChangesetCodec.valueBytes(entry.key))
            // PostgreSQL's upsert takes each row once: a changeset naming a
            // register twice is not one Strata makes (the codec refuses an
            // object named twice).
            var registers: Set<String> = []
            // Clamping would turn an even (deleted) length odd (alive).
            guard let cl = Int64(exactly: entry.causalLength) else {
                throw HubError.invalidChangeset(
                    "The '\(typeName)' \(entry.key) has the causal length \(entry.causalLength), past what the hub stores."
                )
            }
            objects.append(
                Object(
                    type: typeName, key: key, causalLength: cl, time: Int64(bitPattern: entry.stamp.time.rawValue),
                    origin: origins[entry.stamp.origin], writerVersion: Int64(clamping: entry.writerVersion)))
            // Each holder's life in this entry, by wire field.
            var lives: [Int: Int64] = [:]
            for change in entry.fields where isHolder[change.field] {
                guard case .int(let life) = change.value, life >= 0 else {
                    throw HubError.invalidChangeset(
                        "The embedded field '\(dotted[change.field])' of a '\(typeName)' holds \(change.value), not its life."
                    )
                }
                lives[change.field] = life
            }
            // A field's register path, nil when a holder above it is
            // missing from the entry (a receiver ignores such a field) or
            // refused.
            var paths: [Int: String] = [:]
            func path(_ index: Int) -> String? {
                if let known = paths[index] { return known }
                let field = content.fields[index]
                guard !refused.contains(Refused(type: typeName, path: dotted[index], descriptor: field.descriptor))
                else { return nil }
                var result = field.path
                if let parent = field.parent {
                    guard let holder = path(parent), let life = lives[parent] else { return nil }
                    result = "\(holder)\(Self.separator)\(life)\(Self.separator)\(field.path)"
                }
                paths[index] = result
                return result
            }
            for change in entry.fields {
                guard let registerPath = path(change.field) else { continue }
                let wire = content.fields[change.field]
                var parent: (String, Int64)?
                var depth = 0
                if let holder = wire.parent {
                    parent = (paths[holder]!, lives[holder]!)
                    var above: Int? = holder
                    while let index = above {
                        depth += 1
                        above = content.fields[index].parent
                    }
                }
                guard registers.insert(registerPath).inserted else {
                    throw HubError.invalidChangeset(
                        "The changeset changes '\(dotted[change.field])' of the '\(typeName)' \(entry.key) twice.")
                }
                let rank = isHolder[change.field] ? lives[change.field]! : 0
                if rank > 0 { holders.append((typeName, key, registerPath)) }
                while fields.count <= depth { fields.append([]) }
                fields[depth].append(
                    Field(
                        type: typeName, key: key, path: registerPath, descriptor: wire.descriptor, rank: rank,
                        value: ByteBuffer(bytes: ChangesetCodec.valueBytes(change.value)),
                        time: Int64(bitPattern: change.stamp.time.rawValue), origin: origins[change.stamp.origin],
                        causalLength: cl, parent: parent, depth: depth))
            }
        }
    }
}
