import Foundation
import HTTPTypes
import Hummingbird
import Strata

/// A refusal the hub answers with: an HTTP status and a JSON body with a
/// stable `error` code, a `message` for people and the code's own fields
/// (docs/Hub.md, "The protocol"). The codes are the client's
/// (``HubRefusal/Code``): one list, which both sides read.
public struct HubError: Error, CustomStringConvertible, Sendable {
    /// The `error` code of the answer.
    public var code: HubRefusal.Code
    /// The HTTP status of the answer.
    public var status: HTTPResponse.Status
    /// What went wrong and what to do, for people.
    public var message: String
    /// The code's own fields, as JSON values.
    public var fields: [String: JSONValue] = [:]

    /// `code: message`.
    public var description: String { "\(code): \(message)" }

    static func invalidChangeset(_ message: String) -> HubError {
        HubError(code: .invalidChangeset, status: .badRequest, message: message)
    }

    static func invalidRequest(_ message: String) -> HubError {
        HubError(code: .invalidRequest, status: .badRequest, message: message)
    }

    static let unauthorized = HubError(
        code: .unauthorized, status: .unauthorized,
        message: "The request has no device token, or its token is unknown or revoked.")

    /// A refused credential: 401 `unauthorized`, with the check that
    /// failed (never the token).
    static func notAuthenticated(_ why: String) -> HubError {
        HubError(code: .unauthorized, status: .unauthorized, message: why)
    }

    static func wrongDataset(_ dataset: UUID, tenant: UUID) -> HubError {
        HubError(
            code: .wrongDataset, status: .forbidden,
            message: "The changeset belongs to dataset \(dataset); this device's token is for dataset \(tenant).",
            fields: ["dataset": .string(dataset.uuidString)])
    }

    static func clockSkew(ahead milliseconds: UInt64, hubTime: UInt64) -> HubError {
        HubError(
            code: .clockSkew, status: .conflict,
            message:
                "The changeset holds a change stamped \(milliseconds) ms ahead of the hub's clock, more than the allowed drift; correct the device's clock.",
            fields: ["hubTime": .number(Double(hubTime))])
    }

    static func siteOfAnotherDevice(_ site: UUID) -> HubError {
        HubError(
            code: .siteOfAnotherDevice, status: .forbidden,
            message:
                "The changeset's file (site \(site.uuidString)) syncs as another device of this tenant: a copy of that device's file? Give the copy an identity of its own (Database.resetSyncIdentity(at:)), or use that device's token.",
            fields: ["site": .string(site.uuidString)])
    }

    static func unknownTenant(_ tenant: UUID) -> HubError {
        HubError(
            code: .unknownTenant, status: .notFound,
            message: "No tenant \(tenant.uuidString) on this hub: add a device to it first (strata-hub device add).")
    }

    /// Sync rules that do not parse or hold together: `line` is the
    /// 1-based line of the text, nil for a fault of the rules as a whole.
    static func invalidRules(line: Int?, _ message: String) -> HubError {
        HubError(
            code: .invalidRules, status: .badRequest,
            message: line.map { "Sync rules, line \($0): \(message)" } ?? "Sync rules: \(message)")
    }

    static func epochChanged(_ epoch: UUID) -> HubError {
        HubError(
            code: .epochChanged, status: .gone,
            message:
                "The hub's data was restored from a backup: pull from the start of epoch \(epoch) and push from the session's pushCursor.",
            fields: ["epoch": .string(epoch.uuidString)])
    }

    static func cursorCompacted(since: UInt64, compactedSeq: Int64) -> HubError {
        HubError(
            code: .cursorCompacted, status: .gone,
            message:
                "The cursor \(since) is older than the tombstones this hub compacted (through \(compactedSeq)): pull with catchUp=1 from after=0 to learn which objects were deleted.",
            fields: ["compactedSeq": .number(Double(compactedSeq))])
    }

    static func bodyTooLarge(limit: Int) -> HubError {
        HubError(
            code: .bodyTooLarge, status: .contentTooLarge,
            message: "The body is over the hub's limit of \(limit) bytes; push smaller pages.",
            fields: ["limit": .number(Double(limit))])
    }

    static func unavailable(_ message: String) -> HubError {
        HubError(code: .unavailable, status: .serviceUnavailable, message: message)
    }

    /// A database migrated by a newer hub.
    static func schemaTooNew(_ version: Int, supported: Int) -> HubError {
        HubError(
            code: .schemaTooNew, status: .internalServerError,
            message:
                "The PostgreSQL schema is at version \(version), newer than this hub's \(supported): run the newer strata-hub."
        )
    }

    /// A database this hub's version has not migrated yet.
    static func schemaNotMigrated(_ version: Int, needed: Int) -> HubError {
        HubError(
            code: .schemaNotMigrated, status: .internalServerError,
            message:
                "The PostgreSQL schema is at version \(version), and this hub needs \(needed): run `strata-hub migrate` first."
        )
    }

    /// A failure of the hub's own.
    static func internalError(_ error: any Error) -> HubError {
        HubError(code: .internalError, status: .internalServerError, message: "The hub failed: \(error).")
    }

    /// The JSON body of the answer.
    var body: [String: JSONValue] {
        fields.merging(["error": .string(code.rawValue), "message": .string(message)]) { _, new in new }
    }
}

/// A JSON value of a refusal's own fields (`hubTime`, `epoch`, ...).
public enum JSONValue: Sendable, Equatable, Encodable {
    /// A string.
    case string(String)
    /// A number; a whole one is written without a fraction.
    case number(Double)

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 9e15 {
                try container.encode(Int64(value))
            } else {
                try container.encode(value)
            }
        }
    }
}
