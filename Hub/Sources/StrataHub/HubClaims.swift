import Foundation

/// A device's claims: who it acts for, as sync rules read them
/// (`claims.sub`, `claims.projects`; docs/Hub.md, "Sync rules").
public struct HubClaims: Sendable, Equatable {
    /// One claim's value.
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case array([Value])
    }

    /// The claims by name.
    public var values: [String: Value]

    /// Claims of these values.
    public init(_ values: [String: Value] = [:]) { self.values = values }

    /// The claim `name` as a list: its values when it is an array, else
    /// the one value; empty when the device has no such claim.
    func list(_ name: String) -> [Value] {
        switch values[name] {
        case .array(let elements)?: elements
        case let value?: [value]
        case nil: []
        }
    }
}
