/// Whether a file is used by one app version at a time, or shared with
/// older app versions that must keep reading it. Recorded in the file when
/// it is created, and checked at every open. `Database.Mode` names the
/// same type.
public enum DatabaseMode: String, Sendable, Hashable, Codable {
    /// One app version at a time: raising the schema version migrates the
    /// file, with the migration closure if there is one.
    case local
    /// Older app versions share the data: only additive changes are
    /// allowed, removed properties stay in the file, no migration closure
    /// runs, and the schema version never keeps a device from opening it.
    case synced
}
