import Foundation

/// What a changeset says, decoded: the state of the objects a site
/// changed, each field with the stamp of its last write, named by type
/// name, property path and type descriptor, never by a file's numeric ids.
///
/// ``ChangesetCodec`` writes it as the bytes of a ``Changeset`` and reads
/// it back, refusing damage.
struct ChangesetContent: Equatable, Sendable {
    /// The dataset the changes belong to: files of one dataset exchange
    /// changes, files of two never do.
    var dataset: SiteID
    /// The site that sent the changeset.
    var sender: SiteID
    /// The schema version of the sender's app.
    var writerSchemaVersion: UInt64
    /// The sender's clock when it made the changeset: a receiver refuses
    /// one too far ahead of its own.
    var senderTime: HybridTime
    /// The sender's last change sequence number when it made the
    /// changeset: how recent what it says is.
    var senderSeq: UInt64 = 0
    /// Each entry holds the fields that changed after this sequence number
    /// (at most `fromSeq`): the receiver has the others.
    var baseline: UInt64 = 0
    /// The sender's change log the changeset covers: the objects whose
    /// last change is past the position (`fromSeq`, `fromKey`), up to the
    /// position (`toSeq`, `toKey`) included (``LogPosition``). A key is
    /// empty unless the page starts or ends inside that sequence number.
    var fromSeq: UInt64
    var fromKey: [UInt8] = []
    var toSeq: UInt64
    var toKey: [UInt8] = []
    /// Whether the sender has more changes after the changeset's end (a
    /// page); a last page ends at a whole sequence number.
    var hasMore: Bool
    /// The object types the entries name.
    var types: [WireType]
    /// The fields the entries name.
    var fields: [WireField]
    /// The sites the stamps name.
    var origins: [SiteID]
    /// At most one per object.
    var entries: [ChangeEntry]

    /// Where the changeset starts in the sender's change log (past it).
    var from: LogPosition { LogPosition(seq: fromSeq, key: fromKey) }
    /// Where it ends (included).
    var to: LogPosition { LogPosition(seq: toSeq, key: toKey) }

    /// The latest clock time the changeset holds: the sender's, or a
    /// stamp's.
    var latestTime: HybridTime {
        entries.reduce(senderTime) { latest, entry in
            entry.fields.reduce(max(latest, entry.stamp.time)) { max($0, $1.stamp.time) }
        }
    }
}

/// An object type as a changeset names it.
struct WireType: Equatable, Sendable {
    var name: String
    /// The name of the primary key property: a receiver that learns the
    /// type names its key the same, so that the app version declaring
    /// the type later finds it as it declares it.
    var keyName: String
    /// The primary key's descriptor (``FieldDescriptor``), such as `int`:
    /// two files whose types of one name have other key types cannot
    /// exchange objects of it.
    var keyDescriptor: String
}

/// A field as a changeset names it: its type (an index into
/// ``ChangesetContent/types``), its name, its descriptor and, for a field
/// of an embedded object, the field that holds that object. Two fields of
/// one name and another descriptor are two fields.
///
/// An embedded object is merged per path: its field (descriptor
/// `embedded(T)` or `embedded(T)?`) carries the object's life (an int:
/// odd while it holds an object, even while null), and each field inside
/// it is a field of its own whose `parent` is the holder's index.
struct WireField: Hashable, Sendable {
    var type: Int
    /// The property's name (in its embedded type, for a field inside one).
    var path: String
    var descriptor: String
    /// The index in ``ChangesetContent/fields`` of the embedded field this
    /// one is inside; nil for a field of the object itself.
    var parent: Int? = nil
}

extension ChangesetContent {
    /// The dotted path of `field` (`home.street`), for messages.
    func name(of field: WireField) -> String {
        field.parent.map { "\(name(of: fields[$0])).\(field.path)" } ?? field.path
    }
}

/// One object's state in a changeset.
struct ChangeEntry: Equatable, Sendable {
    /// An index into ``ChangesetContent/types``.
    var type: Int
    /// The primary key.
    var key: Value
    /// The causal length: odd while the object lives, even once deleted.
    var causalLength: UInt64
    /// The highest schema version of the apps that wrote the object.
    var writerVersion: UInt64
    /// The stamp of the object's last change; with ``causalLength``, a
    /// tombstone's stamp.
    var stamp: WireStamp
    /// The fields, each at most once; none for a tombstone.
    var fields: [FieldChange]
}

/// A stamp in a changeset: a time and an index into
/// ``ChangesetContent/origins``.
struct WireStamp: Equatable, Sendable {
    var time: HybridTime
    var origin: Int
}

/// One field's value and the stamp of its last write.
struct FieldChange: Equatable, Sendable {
    /// An index into ``ChangesetContent/fields``.
    var field: Int
    var stamp: WireStamp
    /// The value: a scalar, a link (`.link(key)`), a list, or an embedded
    /// object (`.object`, its fields by name).
    var value: Value
}
