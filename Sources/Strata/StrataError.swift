/// The one error type Strata throws.
///
/// Every error carries a ``code`` that you can match on, and a ``message``
/// written for a person: it names the file, object type, property and schema
/// versions involved, and says what to do about it.
///
/// ```swift
/// do {
///     try db.write { tx in try tx.insert("Person", ["id": 1]) }
/// } catch let error as StrataError where error.code == .duplicatePrimaryKey {
///     print(error.message)
/// }
/// ```
public struct StrataError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation: what happened, where, and what to do.
    public var message: String
    /// The LMDB result code behind this error, when LMDB reported one.
    public var lmdbCode: LMDBResultCode?
    /// The file the error concerns, when there is one.
    public var path: String?
    /// The error that caused this one, when Strata reports an error of
    /// yours: what a migration closure threw, for example. Match on its type:
    ///
    /// ```swift
    /// } catch let error as StrataError where error.cause is ImportError {
    ///     // the migration closure threw an ImportError; nothing was written
    /// }
    /// ```
    public var cause: (any Error)?

    /// Creates an error.
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
        self.code = code
        self.message = message
        self.path = path
        self.lmdbCode = lmdbCode
        self.cause = cause
    }

    /// The message. (It already names the LMDB result code when there is one.)
    public var description: String { message }
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
        /// A primary key encodes to more bytes than LMDB allows in a key (511).
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

        /// The code's name, e.g. `duplicatePrimaryKey`.
        public var description: String { kind.rawValue }
    }
}
