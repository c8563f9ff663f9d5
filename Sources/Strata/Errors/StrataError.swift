/// The one error type Strata throws.
///
/// Every error carries a ``code`` that you can match on, the context of the
/// failure as fields (``path``, ``typeName``, ``property``, ``key``, the
/// schema versions, the ``items`` of a list, the ``remedy``), and a
/// ``message`` for a person, rendered from those parts: it names the file,
/// object type, property and schema versions involved, and says what to do
/// about it. Code reads the fields; the message is for people.
///
/// ```swift
/// do {
///     try db.write { tx in try tx.insert("Person", ["id": 1]) }
/// } catch let error as StrataError where error.code == .duplicatePrimaryKey {
///     print(error.typeName ?? "", error.key ?? "")  // Person 1
///     print(error.message)
/// }
/// ```
public struct StrataError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public var code: Code
    /// What happened, in a sentence or two. When the error has ``items``,
    /// this is the heading of that list, without its closing colon.
    public var summary: String
    /// The lines of a list the error reports, one entry each and without
    /// a leading dash: the problems of a schema, the changes a migration
    /// refuses, the objects that deny a delete. Empty when there is none.
    public var items: [String]
    /// What to do about it, when there is something to say beyond the
    /// ``summary``.
    public var remedy: String?
    /// Whether the failed operation left the file as it was; the message
    /// then ends by saying so (see ``outcome``).
    public var nothingWritten: Bool
    /// The file the error concerns, when there is one.
    public var path: String?
    /// The name of the object type (or embedded type) involved, when there
    /// is one.
    public var typeName: String?
    /// The name of the property involved, when there is one.
    public var property: String?
    /// The key of the object involved, as a person reads it: the primary
    /// key's value (`7`, `"ada"`) or an automatic id (`id 12`).
    public var key: String?
    /// The schema version the failure starts from: the file's version for
    /// a migration or a version conflict.
    public var fromVersion: UInt64?
    /// The schema version the failure was heading to: the version a
    /// configuration or a migration asks for.
    public var toVersion: UInt64?
    /// The stage of work the error happened in, when it is one Strata
    /// names; ``Phase/migration`` for an error raised or restated by a
    /// running migration.
    public var phase: Phase?
    /// Where within that stage it happened, as the message says it: the
    /// call of the ``Migration`` API (`migration.rename(...)`) or the
    /// object being migrated (`on the 'Person' object 2`).
    public var operation: String?
    /// The LMDB result code behind this error, when LMDB reported one.
    public var lmdbCode: LMDBResultCode?
    /// The byte offset at which damaged bytes were found, when the error
    /// is about bytes handed to Strata (a changeset).
    public var offset: Int?
    /// The error that caused this one, kept whole: what a migration closure
    /// threw, for example, or the `StrataError` that a migration restates
    /// with the step it happened in. Match on its type:
    ///
    /// ```swift
    /// } catch let error as StrataError where error.cause is ImportError {
    ///     // the migration closure threw an ImportError; nothing was written
    /// }
    /// ```
    ///
    /// When a migration restates a `StrataError` with the step it happened
    /// in, the message repeats that error after the ``summary``.
    public var cause: (any Error)?
    /// Whether the message repeats ``cause``, a `StrataError`, after the
    /// ``summary``: true when a migration restates an error with the step
    /// it happened in.
    public internal(set) var restatesCause = false

    /// Creates an error from a message of your own: its ``summary``.
    ///
    /// Strata's own errors are made by one factory per family of errors,
    /// which sets the fields as well; this initializer sets only the
    /// ``summary`` and what you pass.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: What happened and what to do.
    ///   - path: The database file involved, if any.
    ///   - lmdbCode: The LMDB result code, if LMDB reported the failure.
    ///   - cause: The error behind this one, if any.
    public init(
        _ code: Code, _ message: String, path: String? = nil, lmdbCode: LMDBResultCode? = nil,
        cause: (any Error)? = nil
    ) {
        self.init(code, summary: message, path: path, lmdbCode: lmdbCode, cause: cause)
    }

    /// Creates an error from its parts; every factory goes through here.
    init(
        _ code: Code, summary: String, items: [String] = [], remedy: String? = nil, nothingWritten: Bool = false,
        path: String?, typeName: String? = nil, property: String? = nil, key: String? = nil,
        fromVersion: UInt64? = nil, toVersion: UInt64? = nil, phase: Phase? = nil, operation: String? = nil,
        lmdbCode: LMDBResultCode? = nil, offset: Int? = nil, cause: (any Error)? = nil
    ) {
        self.code = code
        self.summary = summary
        self.items = items
        self.remedy = remedy
        self.nothingWritten = nothingWritten
        self.path = path
        self.typeName = typeName
        self.property = property
        self.key = key
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.phase = phase
        self.operation = operation
        self.lmdbCode = lmdbCode
        self.offset = offset
        self.cause = cause
    }

    /// What the failure left behind, as the message's last sentence:
    /// "Nothing was written." (in a migration, with the version the file is
    /// still at), or nil when ``nothingWritten`` is false.
    public var outcome: String? {
        guard nothingWritten else { return nil }
        if phase == .migration, let fromVersion {
            return "Nothing was written; the file is still at version \(fromVersion)."
        }
        return "Nothing was written."
    }

    /// The message for a person, rendered from the parts: the ``summary``,
    /// a restated `StrataError` ``cause``, the ``items`` as a list of
    /// "- " lines, the ``remedy`` and the ``outcome``.
    public var message: String {
        guard let outcome else { return body }
        return body + (items.isEmpty || remedy != nil ? " " : "\n") + outcome
    }

    /// The message without its ``outcome``: what a restating error repeats.
    var body: String {
        var text = summary
        if restatesCause, let inner = cause as? StrataError { text += " " + inner.body }
        if !items.isEmpty { text += ":\n" + items.map { "- " + $0 }.joined(separator: "\n") }
        if let remedy { text += (items.isEmpty ? " " : "\n") + remedy }
        return text
    }

    /// The message.
    public var description: String { message }
}

extension StrataError {
    /// The stage of work an error happened in.
    ///
    /// A struct rather than an enum, so that new phases can be added
    /// without breaking an exhaustive `switch` in your code.
    public struct Phase: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A migration run while opening the file: the error names the step
        /// (``StrataError/fromVersion`` to ``StrataError/toVersion``) and,
        /// in ``StrataError/operation``, where in the step it happened.
        public static let migration = Phase("migration")

        /// The phase's name, e.g. `migration`.
        public var description: String { name }
    }
}

extension StrataError {
    /// The kind of a ``StrataError``.
    ///
    /// A struct rather than an enum, so that new codes can be added without
    /// breaking an exhaustive `switch` in your code. Compare with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Sendable {
            case invalidSchema
            case notAStrataFile
            case corruptFile
            case unsupportedFormatVersion
            case migrationRequired
            case schemaVersionTooLow
            case unknownObjectType
            case unknownProperty
            case invalidValue
            case missingValue
            case duplicatePrimaryKey
            case keyTooLarge
            case objectNotFound
            case storage
            case fileSystem
            case readOnly
            case closed
            case modeMismatch
            case migrationForbidden
            case migrationFailed
            case invalidConfiguration
            case schemaChanged
            case deleteDenied
            case unknownEnumValue
            case changesetRefused
            case invalidChangeset
            case hubRefused
            case hubUnavailable
        }

        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// The schema given in a configuration breaks a rule (empty or
        /// duplicate name, bad primary key, a default of the wrong type, ...).
        public static let invalidSchema = Code(.invalidSchema)
        /// The file exists but is not a Strata database (random bytes, an
        /// empty file, or an LMDB file without a Strata catalog).
        public static let notAStrataFile = Code(.notAStrataFile)
        /// The file is a Strata database but is damaged: truncated, or a
        /// record or catalog that does not decode.
        public static let corruptFile = Code(.corruptFile)
        /// The file was written by a newer version of Strata, with a file
        /// format this version cannot read.
        public static let unsupportedFormatVersion = Code(.unsupportedFormatVersion)
        /// The configured schema or schema version differs from the file's
        /// and opening it would need a migration.
        public static let migrationRequired = Code(.migrationRequired)
        /// The configured schema version is lower than the file's.
        public static let schemaVersionTooLow = Code(.schemaVersionTooLow)
        /// An object type name that the schema does not contain.
        public static let unknownObjectType = Code(.unknownObjectType)
        /// A property name that the object type does not contain.
        public static let unknownProperty = Code(.unknownProperty)
        /// A value of the wrong type, or `null` for a required property.
        public static let invalidValue = Code(.invalidValue)
        /// A required property without a default was given no value.
        public static let missingValue = Code(.missingValue)
        /// An insert used a primary key that another object already has.
        public static let duplicatePrimaryKey = Code(.duplicatePrimaryKey)
        /// A write's primary key encodes to more bytes than LMDB allows in a
        /// key (511). A lookup, delete or query by such a key finds nothing
        /// instead.
        public static let keyTooLarge = Code(.keyTooLarge)
        /// An update named an object that does not exist.
        public static let objectNotFound = Code(.objectNotFound)
        /// LMDB reported an error; see ``StrataError/lmdbCode``.
        public static let storage = Code(.storage)
        /// A file system operation failed (permissions, a missing folder, ...).
        public static let fileSystem = Code(.fileSystem)
        /// A write was attempted on a database opened read-only.
        public static let readOnly = Code(.readOnly)
        /// The database was used after ``Database/close()``.
        public static let closed = Code(.closed)
        /// The file was created in the other mode: a synced-mode file opened
        /// in local mode, or the reverse.
        public static let modeMismatch = Code(.modeMismatch)
        /// Opening would need a change that the file's mode forbids: in
        /// synced mode, a migration closure or a destructive schema change.
        public static let migrationForbidden = Code(.migrationForbidden)
        /// The migration closure threw an error of its own (kept as
        /// ``StrataError/cause``), broke a rule of
        /// the ``Migration`` API (a rename that does not fit, deleting data of
        /// a type the schema still has, changing a primary key value the
        /// schema keeps). Nothing was written. A duplicate primary key or an
        /// invalid value after the closure has its own code
        /// (``duplicatePrimaryKey``, ``invalidValue``, ``missingValue``).
        public static let migrationFailed = Code(.migrationFailed)
        /// Configuration options that cannot be combined, such as
        /// `deleteIfMigrationNeeded` in synced mode.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// Another `Database` or another process changed the file's schema
        /// (a migration) after this `Database` was opened. Open it again.
        public static let schemaChanged = Code(.schemaChanged)
        /// A delete was refused because objects link to the object (or to
        /// an object its delete cascades to) through a link whose delete
        /// rule is ``DeleteRule/deny``; the message names them.
        public static let deleteDenied = Code(.deleteDenied)
        /// A stored object holds a raw value that no case of a
        /// ``PersistableEnum`` property's enum has (a newer app version
        /// added the case), and the enum declares no
        /// ``PersistableEnum/unknownCase``; the message names the type,
        /// the property, the key and the raw value.
        public static let unknownEnumValue = Code(.unknownEnumValue)
        /// A sync changeset was refused before anything of it was applied:
        /// it belongs to another dataset, comes from this very file (a
        /// copy that needs a new identity), is stamped too far in the
        /// future, or names a type whose primary key differs here; the
        /// message says which.
        public static let changesetRefused = Code(.changesetRefused)
        /// A changeset's bytes are damaged (truncated, corrupt, or not
        /// what Strata writes): the message says which part is wrong and
        /// ``StrataError/offset`` at which byte. Nothing of it is applied.
        public static let invalidChangeset = Code(.invalidChangeset)
        /// A sync hub answered a request with an error: an unknown token,
        /// another dataset, a clock too far ahead, a body too large, a new
        /// epoch. ``StrataError/hubRefusal`` holds the hub's code, HTTP
        /// status, message and the fields that come with the code.
        public static let hubRefused = Code(.hubRefused)
        /// A sync hub could not be reached, or failed (HTTP 500, 503, a
        /// network error, an answer that does not decode): try again later.
        /// ``StrataError/cause`` keeps the error behind it.
        public static let hubUnavailable = Code(.hubUnavailable)

        /// The code's name, e.g. `duplicatePrimaryKey`.
        public var description: String { kind.rawValue }
    }
}
