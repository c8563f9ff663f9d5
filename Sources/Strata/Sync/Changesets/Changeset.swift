import Foundation

/// The changes one site sends another: the state of the objects it
/// changed, each field with the stamp of its last write, in the binary
/// format `SCS1` (`docs/FileFormat.md`, "Changesets (sync)").
///
/// A changeset is plain bytes: store it, send it, hand it across threads.
/// Making one from bytes checks nothing; reading it does, and refuses a
/// changeset that is truncated or corrupt (its checksum) or not what Strata
/// writes, with a ``StrataError`` of code
/// ``StrataError/Code/invalidChangeset`` that says which part is wrong and
/// at which byte.
///
/// ```swift
/// let changeset = Changeset(data: received)
/// let summary = try changeset.summary()
/// print(summary.sender, summary.entryCount, summary.hasMore)
/// ```
public struct Changeset: Sendable, Equatable {
    /// The bytes.
    public let data: Data

    /// A changeset of `data`, unchecked: reading it checks it.
    public init(data: Data) {
        self.data = data
    }

    /// What a changeset's header says, read without applying it.
    public struct Summary: Sendable, Equatable {
        /// The dataset the changes belong to.
        public var dataset: SiteID
        /// The site that sent the changeset.
        public var sender: SiteID
        /// The schema version of the sender's app.
        public var writerSchemaVersion: UInt64
        /// The sender's clock when it made the changeset.
        public var senderTime: HybridTime
        /// The sender's change sequence numbers the changeset covers: after
        /// `fromSeq`, up to `toSeq` included.
        public var fromSeq: UInt64
        /// Empty, or where in ``fromSeq`` the changeset starts: the page
        /// before it ended inside that sequence number (a transaction with
        /// more objects than a page holds), after the object of this key
        /// (``SyncCursor/afterKey``).
        public var fromKey: Data
        /// The last sequence number the changeset covers.
        public var toSeq: UInt64
        /// Empty, or where in ``toSeq`` the changeset ends: the key of its
        /// last object, when the sender has more objects of ``toSeq``
        /// (``SyncCursor/afterKey``).
        public var toKey: Data
        /// Whether the sender has more changes after the changeset's end:
        /// the changeset is one page of several.
        public var hasMore: Bool
        /// The number of objects the changeset holds, tombstones included.
        public var entryCount: Int
    }

    /// The changeset's header and number of entries, after checking its
    /// checksum, header and tables. The entries are checked when it is
    /// applied.
    ///
    /// - Throws: ``StrataError/Code/invalidChangeset`` when the bytes are
    ///   damaged or not a changeset.
    public func summary() throws -> Summary {
        try ChangesetCodec.summary(data)
    }
}
