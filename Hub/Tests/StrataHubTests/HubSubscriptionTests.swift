import Foundation
@_spi(Hub) import Strata
import StrataHub
import Testing

/// A transport that passes every call to `hub` but fails the first-pull
/// pages after the first `allowed`: an exchange cut in the middle of a
/// subscription's first pull.
struct FailingFirstPulls: SyncHub {
    let hub: HTTPHub
    let allowed: Int
    let calls = CallCounter()

    func session(site: SiteID) async throws -> HubSession { try await hub.session(site: site) }
    func push(_ changeset: Changeset) async throws -> HubPushAnswer { try await hub.push(changeset) }
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset {
        try await hub.pull(from: cursor, epoch: epoch, limit: limit)
    }
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int, subscriptions: [SyncSubscription]) async throws
        -> Changeset
    {
        try await hub.pull(from: cursor, epoch: epoch, limit: limit, subscriptions: subscriptions)
    }
    func firstPull(_ subscription: SyncSubscription, upto: UInt64, after: Data, epoch: UUID, limit: Int) async throws
        -> Changeset
    {
        guard calls.next() < allowed else { throw HubTestError("the connection dropped") }
        return try await hub.firstPull(subscription, upto: upto, after: after, epoch: epoch, limit: limit)
    }
    func commits() -> AsyncStream<UInt64> { AsyncStream { $0.finish() } }
}

// @unchecked: `value` is read and written only while holding `lock`.
/// A count of calls behind a lock.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// The calls counted before this one.
    func next() -> Int {
        lock.withLock {
            defer { value += 1 }
            return value
        }
    }
}

@Suite("Subscriptions through the hub")
struct HubSubscriptionTests {
    static let rules = """
        Doc: true
        Doc fields: ownerID
        """

    /// A writer's file of `count` documents, owner `a`, `b` or `c` in turn,
    /// pushed to the hub.
    static func written(_ count: Int, from start: Int = 0, _ writer: Database, _ hub: HTTPHub) async throws {
        try await writer.write { tx in
            for id in start ..< start + count { try tx.insert(OwnedDoc(id: id, ownerID: ["a", "b", "c"][id % 3])) }
        }
        try await writer.sync.exchange(with: hub)
    }

    static func owners(_ db: Database) async throws -> [String: Int] {
        try await db.read { tx in
            try tx.objects(OwnedDoc.self).array().reduce(into: [:]) { $0[$1.ownerID, default: 0] += 1 }
        }
    }

    /// A writer's and a reader's file of a new tenant with `rules` (none
    /// when nil), each with a transport to `hub` served over HTTP.
    struct Pair {
        let hub: Hub
        let tenant: UUID
        let writer: Database
        let reader: Database
        let writerHub: HTTPHub
        let readerHub: HTTPHub
        /// The reader's device.
        let readerDevice: Hub.Device
    }

    static func withPair(rules: String? = Self.rules, _ body: @escaping @Sendable (Pair) async throws -> Void)
        async throws
    {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let writer = try folder.open("writer.strata", tenant: tenant, models: RuledDevice.models)
            let reader = try folder.open("reader.strata", tenant: tenant, models: RuledDevice.models)
            defer { [writer, reader].forEach { $0.close() } }
            let writerToken = try await hub.addDevice(tenant: tenant, name: "writer").token
            let (readerID, readerToken) = try await hub.addDevice(tenant: tenant, name: "reader")
            if let rules { try await hub.setRules(tenant: tenant, source: rules) }
            try await HubClientTests.serving(hub) { url in
                try await body(
                    Pair(
                        hub: hub, tenant: tenant, writer: writer, reader: reader,
                        writerHub: HTTPHub(url: url, token: writerToken),
                        readerHub: HTTPHub(url: url, token: readerToken),
                        readerDevice: Hub.Device(id: readerID, tenant: tenant)))
            }
        }
    }

    @Test func aDeviceSyncsOnlyWhatItsSubscriptionsSelect() async throws {
        try await HubSubscriptionTests.withPair { pair in
            let (writer, reader) = (pair.writer, pair.reader)
            let (writerHub, readerHub) = (pair.writerHub, pair.readerHub)
            try await Self.written(30, writer, writerHub)
            let first = try reader.sync.subscribe("a's") { tx in
                try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID == "a" })
            }
            #expect(first.state == .pending)
            #expect(try reader.sync.subscriptions() == [first])
            // Pages of 4: the first pull of the subscription takes three.
            let report = try await reader.sync.exchange(with: readerHub, pageSize: 4)
            #expect(try await Self.owners(reader) == ["a": 10])
            #expect(report.received.changedObjects == 10)
            #expect(try reader.sync.subscriptions().map(\.state) == [.complete])
            // Changes after it: only a's arrive.
            try await Self.written(6, from: 30, writer, writerHub)
            try await reader.sync.exchange(with: readerHub)
            #expect(try await Self.owners(reader) == ["a": 12])
            // A second subscription brings b's, old and new; c's never come.
            try reader.sync.subscribe("b's") { tx in try tx.objects("Doc").where("ownerID", in: [.string("b")]) }
            try await reader.sync.exchange(with: readerHub, pageSize: 5)
            #expect(try await Self.owners(reader) == ["a": 12, "b": 12])
            #expect(try reader.sync.subscriptions().map(\.state) == [.complete, .complete])
            // The reader's own writes go to the hub as always.
            try await reader.write { tx in try tx.insert(OwnedDoc(id: 100, ownerID: "c")) }
            try await reader.sync.exchange(with: readerHub)
            try await writer.sync.exchange(with: writerHub)
            #expect(try await writer.read { try $0.object(OwnedDoc.self, primaryKey: 100)?.ownerID } == "c")
            // Removed: b's notes leave the reader, but for one it
            // edited and has not sent; nothing leaves the hub.
            try await reader.write { tx in try tx.update("Doc", key: 4, ["text": .string("edited, not sent")]) }
            let b = try #require(try reader.sync.subscriptions().last)
            #expect(try reader.sync.unsubscribe(b.id))
            #expect(!(try reader.sync.unsubscribe(b.id)))
            #expect(try await Self.owners(reader) == ["a": 12, "b": 1, "c": 1])
            #expect(try reader.verify().isEmpty)
            try await writer.write { tx in try tx.update("Doc", key: 1, ["text": .string("changed")]) }
            try await writer.sync.exchange(with: writerHub)
            try await reader.sync.exchange(with: readerHub)
            try await writer.sync.exchange(with: writerHub)
            #expect(try await reader.read { try $0.object(OwnedDoc.self, primaryKey: 1) } == nil)
            #expect(try await Self.owners(writer) == ["a": 12, "b": 12, "c": 13])
            #expect(
                try await writer.read { try $0.object(OwnedDoc.self, primaryKey: 4)?.text } == "edited, not sent")
        }
    }

    /// A first pull cut off resumes where it was, and subscriptions hold
    /// across a reopen of the file.
    @Test func aFirstPullCutOffResumesAfterAReopen() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let writer = try folder.open("writer.strata", tenant: tenant, models: RuledDevice.models)
            defer { writer.close() }
            let writerToken = try await hub.addDevice(tenant: tenant, name: "writer").token
            let readerToken = try await hub.addDevice(tenant: tenant, name: "reader").token
            try await hub.setRules(tenant: tenant, source: Self.rules)
            try await HubClientTests.serving(hub) { url in
                try await Self.written(60, writer, HTTPHub(url: url, token: writerToken))
                let readerHub = HTTPHub(url: url, token: readerToken)
                do {
                    let reader = try folder.open("reader.strata", tenant: tenant, models: RuledDevice.models)
                    defer { reader.close() }
                    // Synced up to the hub's last commit with a's: a new
                    // subscription's objects come from its first pull.
                    try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self).where(\.ownerID, equals: "a") }
                    try await reader.sync.exchange(with: readerHub)
                    #expect(try await Self.owners(reader) == ["a": 20])
                    try reader.sync.subscribe { tx in
                        try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID == "b" || $0.ownerID == "c" })
                    }
                    await #expect(throws: (any Error).self) {
                        try await reader.sync.exchange(with: FailingFirstPulls(hub: readerHub, allowed: 2), pageSize: 7)
                    }
                    #expect(try reader.sync.subscriptions().map(\.state) == [.complete, .pulling(objects: 14)])
                    let partial = try await Self.owners(reader)
                    #expect(partial["a"] == 20 && partial["b", default: 0] + partial["c", default: 0] == 14)
                }
                let reader = try folder.open("reader.strata", tenant: tenant, models: RuledDevice.models)
                defer { reader.close() }
                #expect(try reader.sync.subscriptions().map(\.state) == [.complete, .pulling(objects: 14)])
                let resumed = try await reader.sync.exchange(with: readerHub, pageSize: 7)
                #expect(try await Self.owners(reader) == ["a": 20, "b": 20, "c": 20])
                // It went on from the 15th object: 26 more, none twice.
                #expect(resumed.pulledObjects == 26)
                #expect(try reader.sync.subscriptions().map(\.state) == [.complete, .complete])
            }
        }
    }

    /// What a subscription may not be: refused on the device before it is
    /// kept, or by the hub naming the fields its rules list.
    @Test func aSubscriptionTheHubCannotEvaluateIsRefused() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let reader = try folder.open("reader.strata", tenant: tenant, models: RuledDevice.models)
            defer { reader.close() }
            let readerToken = try await hub.addDevice(tenant: tenant, name: "reader").token
            #expect(throws: StrataError.self) {
                try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self).filter(#Predicate { $0.id > 3 }) }
            }
            #expect(throws: StrataError.self) {
                try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self).filter { $0.text.isEmpty } }
            }
            #expect(throws: StrataError.self) {
                try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self).sorted(by: \.ownerID) }
            }
            #expect(try reader.sync.subscriptions().isEmpty)
            try await HubClientTests.serving(hub) { url in
                let readerHub = HTTPHub(url: url, token: readerToken)
                // An open dataset: whole types only.
                let byText = try reader.sync.subscribe { tx in
                    try tx.objects("Doc").where("text", equals: .string("x"))
                }
                await #expect {
                    try await reader.sync.exchange(with: readerHub)
                } throws: { error in
                    (error as? StrataError)?.hubRefusal?.code == .invalidRequest
                }
                try reader.sync.unsubscribe(byText.id)
                try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self) }
                try await reader.sync.exchange(with: readerHub)
                #expect(try reader.sync.subscriptions().map(\.state) == [.complete])
                // With rules: only the fields they list.
                try await hub.setRules(tenant: tenant, source: Self.rules)
                try reader.sync.subscribe { tx in try tx.objects("Doc").where("text", equals: .string("x")) }
                await #expect {
                    try await reader.sync.exchange(with: readerHub)
                } throws: { error in
                    guard let refusal = (error as? StrataError)?.hubRefusal else { return false }
                    return refusal.code == .invalidRequest && refusal.message.contains("tests text")
                        && refusal.message.contains("(ownerID)")
                }
            }
        }
    }

    /// A subscription of a range of values: its first pull, its pulls, an
    /// object that leaves it; values kept before the rules were set are
    /// ordered when they are. A range of the primary key is refused.
    @Test func aSubscriptionOfARangeSelectsByOrder() async throws {
        try await HubSubscriptionTests.withPair(rules: nil) { pair in
            let (hub, tenant, writer, reader) = (pair.hub, pair.tenant, pair.writer, pair.reader)
            let (writerHub, readerHub) = (pair.writerHub, pair.readerHub)
            try await Self.written(9, writer, writerHub)
            // Set after the documents: their values are ordered then.
            try await hub.setRules(tenant: tenant, source: Self.rules)
            try reader.sync.subscribe("b and after") { tx in
                try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID >= "b" })
            }
            try await reader.sync.exchange(with: readerHub, pageSize: 4)
            #expect(try await Self.owners(reader) == ["b": 3, "c": 3])
            try await Self.written(3, from: 9, writer, writerHub)
            try await reader.sync.exchange(with: readerHub)
            #expect(try await Self.owners(reader) == ["b": 4, "c": 4])
            try await writer.write { tx in try tx.update("Doc", key: 1, ["ownerID": .string("a")]) }
            try await writer.sync.exchange(with: writerHub)
            let report = try await reader.sync.exchange(with: readerHub)
            #expect(report.received.leftObjects == 1)
            #expect(try await Self.owners(reader) == ["b": 3, "c": 4])
            // Refused on the device; a client that sent one anyway is
            // refused by the hub.
            #expect(throws: StrataError.self) {
                try reader.sync.subscribe { tx in try tx.objects(OwnedDoc.self).filter(#Predicate { $0.id > 100 }) }
            }
            let keyRange = HubSubscriptions(entries: [
                .init(
                    type: "Doc", filter: .range(field: "id", lower: .init(.int(100), inclusive: false), upper: nil))
            ])
            await #expect(throws: HubError.self) {
                try await hub.pull(
                    device: pair.readerDevice, since: 0, after: 0, epoch: nil, limit: 10,
                    subscriptions: keyRange)
            }
        }
    }

    /// A subscription's first pull brings the tombstones of what it
    /// selects: a key the device inserts again after it is a deliberate
    /// re-insert, which lives, as on a device that pulled everything.
    @Test func aSubscriptionKnowsWhatWasDeleted() async throws {
        try await Self.withPair { pair in
            let (writer, reader) = (pair.writer, pair.reader)
            try await Self.written(9, writer, pair.writerHub)
            try await writer.write { tx in _ = try tx.delete(OwnedDoc.self, primaryKey: 3) }
            try await writer.sync.exchange(with: pair.writerHub)
            try reader.sync.subscribe("a's") { tx in
                try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID == "a" })
            }
            try await reader.sync.exchange(with: pair.readerHub)
            #expect(try await reader.read { try $0.objects(OwnedDoc.self).map(\.id) } == [0, 6])
            try await reader.write { tx in try tx.insert(OwnedDoc(id: 3, ownerID: "a", text: "again")) }
            try await reader.sync.exchange(with: pair.readerHub)
            try await writer.sync.exchange(with: pair.writerHub)
            #expect(try await writer.read { try $0.object(OwnedDoc.self, primaryKey: 3)?.text } == "again")
        }
    }
}
