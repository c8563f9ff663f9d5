import Foundation

/// What a changeset says, decoded: the state of the objects a site
/// changed, each field with the stamp of its last write, named by type
/// name, property path and type descriptor, never by a file's numeric ids.
///
/// ``ChangesetCodec`` writes it as the bytes of a ``Changeset`` and reads
/// it back, refusing damage.
@_spi(Hub) public struct ChangesetContent: Equatable, Sendable {
    /// The dataset the changes belong to: files of one dataset exchange
    /// changes, files of two never do.
    public var dataset: SiteID
    /// The site that sent the changeset.
    public var sender: SiteID
    /// The schema version of the sender's app.
    public var writerSchemaVersion: UInt64
    /// The sender's clock when it made the changeset: a receiver refuses
    /// one too far ahead of its own.
    public var senderTime: HybridTime
    /// The sender's last change sequence number when it made the
    /// changeset: how recent what it says is.
    public var senderSeq: UInt64 = 0
    /// Each entry holds the fields that changed after this sequence number
    /// (at most `fromSeq`): the receiver has the others.
    public var baseline: UInt64 = 0
    /// The sender's change log the changeset covers: the objects whose
    /// last change is past the position (`fromSeq`, `fromKey`), up to the
    /// position (`toSeq`, `toKey`) included (``LogPosition``). A key is
    /// empty unless the page starts or ends inside that sequence number.
    public var fromSeq: UInt64
    public var fromKey: [UInt8] = []
    public var toSeq: UInt64
    public var toKey: [UInt8] = []
    /// Whether the sender has more changes after the changeset's end (a
    /// page); a last page ends at a whole sequence number.
    public var hasMore: Bool
    /// The object types the entries name.
    public var types: [WireType]
    /// The fields the entries name.
    public var fields: [WireField]
    /// The sites the stamps name.
    public var origins: [SiteID]
    /// At most one per object.
    public var entries: [ChangeEntry]

    /// Where the changeset starts in the sender's change log (past it).
    var from: LogPosition { LogPosition(seq: fromSeq, key: fromKey) }
    /// Where it ends (included).
    var to: LogPosition { LogPosition(seq: toSeq, key: toKey) }

    /// The latest clock time the changeset holds: the sender's, or a
    /// stamp's.
    public var latestTime: HybridTime {
        entries.reduce(senderTime) { latest, entry in
            entry.fields.reduce(max(latest, entry.stamp.time)) { max($0, $1.stamp.time) }
        }
    }
}

/// An object type as a changeset names it.
@_spi(Hub) public struct WireType: Equatable, Sendable {
    /// The type's name, as the catalog and the app's schema spell it.
    public var name: String
    /// The name of the primary key property: a receiver that learns the
    /// type names its key the same, so that the app version declaring
    /// the type later finds it as it declares it.
    public var keyName: String
    /// The primary key's descriptor (``FieldDescriptor``), such as `int`:
    /// two files whose types of one name have other key types cannot
    /// exchange objects of it.
    public var keyDescriptor: String

    @_spi(Hub) public init(name: String, keyName: String, keyDescriptor: String) {
        self.name = name
        self.keyName = keyName
        self.keyDescriptor = keyDescriptor
    }

    /// How a changeset names `type`, whose primary key
    /// (``CatalogType/primaryKeyProperty``) every type of a sync-enabled
    /// file has: the key's name and descriptor.
    init(_ type: CatalogType) {
        guard let key = type.primaryKeyProperty?.property else {
            preconditionFailure("Type '\(type.name)' of a sync-enabled file has no primary key")
        }
        self.init(name: type.name, keyName: key.name, keyDescriptor: FieldDescriptor.descriptor(of: key))
    }
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
@_spi(Hub) public struct WireField: Hashable, Sendable {
    public var type: Int
    /// The property's name (in its embedded type, for a field inside one).
    public var path: String
    public var descriptor: String
    /// The index in ``ChangesetContent/fields`` of the embedded field this
    /// one is inside; nil for a field of the object itself.
    public var parent: Int? = nil

    @_spi(Hub) public init(type: Int, path: String, descriptor: String, parent: Int? = nil) {
        self.type = type
        self.path = path
        self.descriptor = descriptor
        self.parent = parent
    }

    /// Whether the field holds an embedded object (its value is the
    /// object's life), as ``FieldDescriptor`` reads its descriptor; a list
    /// of embedded objects does not.
    public var isEmbedded: Bool { FieldDescriptor(parsing: descriptor)?.type == .embedded }
}

extension ChangesetContent {
    /// The dotted path of `field` (`home.street`), for messages.
    func name(of field: WireField) -> String {
        field.parent.map { "\(name(of: fields[$0])).\(field.path)" } ?? field.path
    }
}

/// One object's state in a changeset.
@_spi(Hub) public struct ChangeEntry: Equatable, Sendable {
    /// An index into ``ChangesetContent/types``.
    public var type: Int
    /// The primary key.
    public var key: Value
    /// The causal length: odd while the object lives, even once deleted;
    /// 0 for an object that left the receiver's view (``leavesView``).
    public var causalLength: UInt64
    /// The highest schema version of the apps that wrote the object.
    public var writerVersion: UInt64
    /// The stamp of the object's last change; with ``causalLength``, a
    /// tombstone's stamp.
    public var stamp: WireStamp
    /// The fields, each at most once; none for a tombstone.
    public var fields: [FieldChange]

    @_spi(Hub) public init(
        type: Int, key: Value, causalLength: UInt64, writerVersion: UInt64, stamp: WireStamp, fields: [FieldChange]
    ) {
        self.type = type
        self.key = key
        self.causalLength = causalLength
        self.writerVersion = writerVersion
        self.stamp = stamp
        self.fields = fields
    }

    /// A hub's word that the object left the receiver's view: its sync
    /// rules or the receiver's subscriptions no longer select it (another
    /// device moved it elsewhere). The receiver removes it without a
    /// delete for any peer to hear of, unless it holds changes of the
    /// receiver that its peers have not acknowledged. Causal length 0, no
    /// fields; only in a hub's pull that asked for them (`leaves=1`).
    public static func leaving(type: Int, key: Value, stamp: WireStamp) -> ChangeEntry {
        ChangeEntry(type: type, key: key, causalLength: 0, writerVersion: 0, stamp: stamp, fields: [])
    }

    /// Whether it says that the object left the receiver's view
    /// (``leaving(type:key:stamp:)``).
    public var leavesView: Bool { causalLength == 0 }
}

/// A stamp in a changeset: a time and an index into
/// ``ChangesetContent/origins``.
@_spi(Hub) public struct WireStamp: Equatable, Sendable {
    public var time: HybridTime
    public var origin: Int

    @_spi(Hub) public init(time: HybridTime, origin: Int) {
        self.time = time
        self.origin = origin
    }
}

/// One field's value and the stamp of its last write.
@_spi(Hub) public struct FieldChange: Equatable, Sendable {
    /// An index into ``ChangesetContent/fields``.
    public var field: Int
    /// The stamp of the field's last write.
    public var stamp: WireStamp
    /// The value: a scalar, a link (`.link(key)`), a list, or an embedded
    /// object (`.object`, its fields by name).
    public var value: Value

    @_spi(Hub) public init(field: Int, stamp: WireStamp, value: Value) {
        self.field = field
        self.stamp = stamp
        self.value = value
    }
}

// Public initializers for the hub (`@_spi(Hub)`), which reads and writes
// changesets as a peer does but merges them in PostgreSQL.
extension ChangesetContent {
    @_spi(Hub) public init(
        dataset: SiteID, sender: SiteID, writerSchemaVersion: UInt64, senderTime: HybridTime, senderSeq: UInt64,
        baseline: UInt64, fromSeq: UInt64, toSeq: UInt64, hasMore: Bool, types: [WireType], fields: [WireField],
        origins: [SiteID], entries: [ChangeEntry]
    ) {
        self.init(
            dataset: dataset, sender: sender, writerSchemaVersion: writerSchemaVersion, senderTime: senderTime,
            senderSeq: senderSeq, baseline: baseline, fromSeq: fromSeq, fromKey: [], toSeq: toSeq, toKey: [],
            hasMore: hasMore, types: types, fields: fields, origins: origins, entries: entries)
    }
}
