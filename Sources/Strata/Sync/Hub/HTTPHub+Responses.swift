import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// How the hub's answers read: pure functions of a status and a body, so
// that they are tested without a server.
extension HTTPHub {
    /// The body of an error answer: `{"error": code, "message": ..., ...}`.
    private struct ErrorBody: Decodable {
        var error: String
        var message: String?
        var hubTime: UInt64?
        var epoch: UUID?
        var limit: Int?
        var dataset: String?
    }

    /// "GET /v1/session": the method and path of `request`, without its
    /// query (a message names the request this way).
    static func name(of request: URLRequest) -> String {
        "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")"
    }

    /// The answer to a push: 200, or 422 `schemaConflict`, whose body is
    /// the same answer with the refused `fields`.
    static func pushAnswer(status: Int, body: Data, request: String) throws -> HubPushAnswer {
        guard status == 200 || status == 422 else { throw error(status: status, body: body, request: request) }
        let answer = try? JSONDecoder().decode(HubPushAnswer.self, from: body)
        guard let answer else {
            // A 422 without an accepted cursor is an error like any other.
            if status == 422 { throw error(status: status, body: body, request: request) }
            return try decode(HubPushAnswer.self, body, request: request)
        }
        return answer
    }

    /// A success's JSON body as `T`; a body that does not decode is the
    /// hub failing (``StrataError/Code/hubUnavailable``).
    static func decode<T: Decodable>(_ type: T.Type, _ body: Data, request: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw StrataError.hubUnavailable(
                request: request, "its answer is not the JSON the protocol describes (\(error))", cause: error)
        }
    }

    /// The error an answer of status `status` (not a success) is:
    /// ``StrataError/Code/hubUnavailable`` for a 5xx,
    /// ``StrataError/Code/hubRefused`` with the hub's ``HubRefusal``
    /// otherwise.
    static func error(status: Int, body: Data, request: String) -> StrataError {
        let refusal = refusal(status: status, body: body)
        guard status < 500 else {
            return StrataError.hubUnavailable(
                request: request, "\(status) \(refusal.code): \(refusal.message)", cause: refusal)
        }
        return StrataError.hubRefused(refusal, request: request)
    }

    /// What an error answer says; an answer without the hub's JSON (a
    /// proxy's page) gets a code named after its status (`http404`).
    static func refusal(status: Int, body: Data) -> HubRefusal {
        guard let decoded = try? JSONDecoder().decode(ErrorBody.self, from: body) else {
            let text = String(decoding: body.prefix(200), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return HubRefusal(
                code: HubRefusal.Code(rawValue: "http\(status)"), status: status,
                message: text.isEmpty ? HTTPURLResponse.localizedString(forStatusCode: status) : text)
        }
        return HubRefusal(
            code: HubRefusal.Code(rawValue: decoded.error), status: status, message: decoded.message ?? "",
            hubTimeMilliseconds: decoded.hubTime, epoch: decoded.epoch, limit: decoded.limit,
            dataset: decoded.dataset)
    }

    /// The sequence number of a stream message `{"hubSeq": N}`; nil for
    /// anything else.
    static func commitSequence(_ message: Data) -> UInt64? {
        struct Message: Decodable { var hubSeq: UInt64 }
        return try? JSONDecoder().decode(Message.self, from: message).hubSeq
    }
}
