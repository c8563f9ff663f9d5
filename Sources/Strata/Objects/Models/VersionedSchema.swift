/// One shipped version of an app's schema, as a Swift type listing the
/// models of that version.
///
/// Keep one per release that changed the schema, with the model types of
/// that release (renamed in Swift, keeping their stored names with
/// `@Model(name:)`), so that a migration can read a file of any version
/// with that version's models:
///
/// ```swift
/// enum AppV1: VersionedSchema {
///     static let version: UInt64 = 1
///     static let models: [any Model.Type] = [PersonV1.self]
/// }
/// ```
public protocol VersionedSchema {
    /// The schema version.
    static var version: UInt64 { get }
    /// The model types of this version.
    static var models: [any Model.Type] { get }
}

extension VersionedSchema {
    /// The stored schema of this version, derived from its models.
    public static var schema: Schema { Schema(ModelDeclaration.objectSchemas(of: models.map { declaration(of: $0) })) }
}
