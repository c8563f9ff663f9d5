import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
@_spi(Hub) import Strata
import StrataHub
import Testing

@Model(name: "Doc")
struct OwnedDoc {
    @PrimaryKey var id: Int
    var ownerID: String
    var text: String = ""
}

@Model(name: "Project")
struct RuledProject {
    @PrimaryKey var id: String
    var name: String
}

@Model(name: "Task")
struct RuledTask {
    @PrimaryKey var id: Int
    var project: Link<RuledProject>?
    var title: String
}

/// A device of a dataset with sync rules: its file, and its claims.
struct RuledDevice {
    let database: Database
    let hub: Hub
    let device: Hub.Device

    static let models: [any Model.Type] = [OwnedDoc.self, RuledProject.self, RuledTask.self]

    /// A new device of `tenant` acting with `claims`.
    init(_ name: String, tenant: UUID, claims: [String: DeviceClaims.Value], hub: Hub, in folder: TemporaryFolder)
        async throws
    {
        database = try folder.open("\(name).strata", tenant: tenant, models: Self.models)
        let id = try await hub.addDevice(tenant: tenant, name: name).device
        device = Hub.Device(id: id, tenant: tenant, claims: DeviceClaims(claims))
        self.hub = hub
    }

    /// Pushes every change, then pulls: the objects the hub refused.
    @discardableResult
    func exchange() async throws -> [HubRefusedObject] {
        let site = try database.sync.site
        var cursor = try await hub.session(device: device, site: site).pushCursor
        var refused: [HubRefusedObject] = []
        while true {
            let changeset = try database.sync.changes(from: cursor, limit: 500)
            let (status, data) = try await hub.push(changeset.data, device: device)
            let answer = try JSONDecoder().decode(HubPushAnswer.self, from: data)
            #expect(status == (answer.refusedObjects.isEmpty ? 200 : 422))
            refused += answer.refusedObjects
            cursor = answer.acceptedThrough
            if !(try changeset.summary().hasMore) { break }
        }
        try await Device.pullAll(into: database, from: hub, as: device)
        return refused
    }

    func docIDs() async throws -> [Int] {
        try await database.read { try $0.objects(OwnedDoc.self).map(\.id) }.sorted()
    }
}

@Suite("Sync rules: what the rules text says")
struct SyncRulesParsingTests {
    @Test func aRulesTextReadsAsItsTypesRules() throws {
        let rules = try SyncRules(
            parsing: """
                # Notes belong to their owner; admins see all.
                Doc: ownerID = claims.sub or 'admin' in claims.roles
                Project read: id in claims.projects
                Project write: 'admin' in claims.roles   # only admins
                Task: project in Project and not (title = 'secret')
                Task fields: title, done
                """)
        #expect(rules.types.keys.sorted() == ["Doc", "Project", "Task"])
        #expect(rules.types["Doc"]?.read == rules.types["Doc"]?.write)
        #expect(rules.types["Project"]?.read == .member(.field("id"), claim: "projects"))
        #expect(
            rules.types["Task"]?.read
                == .all([
                    .follows(field: "project", type: "Project"),
                    .not(.equals(.field("title"), .string("secret"), negated: false)),
                ]))
        #expect(rules.types["Task"]?.subscribable == ["title", "done"])
        #expect(rules.ruledFields == ["Doc": ["ownerID"], "Project": ["id"], "Task": ["project", "title", "done"]])
    }

    @Test(arguments: [
        ("Doc ownerID = claims.sub", "line 1", "'Type: predicate'"),
        ("Doc delete: true", "line 1", "'read', 'write', 'fields' or nothing"),
        ("Doc fields: a, b.c", "line 1", "lists top-level field names"),
        ("Doc: ownerID = 'open", "line 1", "not closed"),
        ("Doc: true\n\nDoc read: false", "line 3", "has a read rule already"),
        ("Doc: ownerID = text", "line 1", "not with another field"),
        ("Doc: ownerID =", "line 1", "ends where a value"),
        ("Doc: home.street = 'x'", "line 1", "top-level fields only"),
        ("Doc:", "line 1", "no predicate"),
        ("Doc: (true", "line 1", "not closed"),
        ("Doc: 1 = 2", "line 1", "two constants"),
        ("Task: project in Project", "Sync rules:", "'Project', which has no read rule"),
        ("A: b in B\nB: a in A", "Sync rules:", "in a circle"),
    ])
    func aBadRulesTextIsRefusedNamingItsLine(text: String, place: String, reason: String) {
        #expect {
            _ = try SyncRules(parsing: text)
        } throws: { error in
            guard let error = error as? HubError else { return false }
            return error.code == .invalidRules && error.message.contains(place) && error.message.contains(reason)
        }
    }
}

@Suite("Sync rules on the hub")
struct HubRulesTests {
    /// Runs `body` with a hub, a new tenant of it, and a maker of the
    /// tenant's devices, each acting with its claims; their files are
    /// closed and removed after.
    static func withTenant(
        _ body:
            @Sendable (Hub, UUID, (String, [String: DeviceClaims.Value]) async throws -> RuledDevice) async throws
            -> Void
    ) async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let made = NIOLockedValueBox<[RuledDevice]>([])
            defer { made.withLockedValue { $0.forEach { $0.database.close() } } }
            try await body(hub, tenant) { name, claims in
                let device = try await RuledDevice(name, tenant: tenant, claims: claims, hub: hub, in: folder)
                made.withLockedValue { $0.append(device) }
                return device
            }
        }
    }

    static let ownerRules = "Doc: ownerID = claims.sub or 'admin' in claims.roles"

    /// Alice and Bob read only their own documents; the admin device, all.
    @Test func aDevicePullsOnlyWhatItsRulesLetItRead() async throws {
        try await Self.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["sub": .string("root"), "roles": .array([.string("admin")])])
            let alice = try await device("alice", ["sub": .string("alice")])
            let bob = try await device("bob", ["sub": .string("bob")])
            let nobody = try await device("nobody", [:])
            try await hub.setRules(tenant: tenant, source: Self.ownerRules)
            try await admin.database.write { tx in
                for id in 1 ... 6 { try tx.insert(OwnedDoc(id: id, ownerID: id % 2 == 0 ? "alice" : "bob")) }
            }
            #expect(try await admin.exchange().isEmpty)
            for member in [alice, bob, nobody] { try await member.exchange() }
            #expect(try await alice.docIDs() == [2, 4, 6])
            #expect(try await bob.docIDs() == [1, 3, 5])
            #expect(try await nobody.docIDs() == [])
            // A delete reaches the devices that could read the object, and
            // no other.
            try await admin.database.write { tx in _ = try tx.delete(OwnedDoc.self, primaryKey: 4) }
            try await admin.exchange()
            let bobBefore = try await bob.database.sync.cursor(of: SiteID(uuid: try await Self.epoch(hub, alice)))
            try await alice.exchange()
            try await bob.exchange()
            #expect(try await alice.docIDs() == [2, 6])
            #expect(try await bob.docIDs() == [1, 3, 5])
            // Bob's cursor moved past the commit, though he got nothing of it.
            let bobAfter = try await bob.database.sync.cursor(of: SiteID(uuid: try await Self.epoch(hub, alice)))
            #expect(bobAfter.after > bobBefore.after)
        }
    }

    /// An object that enters a device's view by a change of one field
    /// arrives whole, not as that field alone.
    @Test func anObjectGivenToADeviceArrivesWithAllItsFields() async throws {
        try await Self.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let bob = try await device("bob", ["sub": .string("bob")])
            try await hub.setRules(tenant: tenant, source: Self.ownerRules)
            try await admin.database.write { tx in try tx.insert(OwnedDoc(id: 1, ownerID: "alice", text: "hello")) }
            try await admin.exchange()
            try await bob.exchange()
            #expect(try await bob.docIDs() == [])
            try await admin.database.write { tx in try tx.update("Doc", key: 1, ["ownerID": .string("bob")]) }
            try await admin.exchange()
            try await bob.exchange()
            let doc = try #require(try await bob.database.read { try $0.object(OwnedDoc.self, primaryKey: 1) })
            #expect(doc.ownerID == "bob")
            #expect(doc.text == "hello")
        }
    }

    /// Subscriptions select within the rules, through every route: a
    /// subscription of someone else's objects gets nothing, by the pull or
    /// by its first pull.
    @Test func aSubscriptionNeverReachesPastTheRules() async throws {
        try await Self.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let alice = try await device("alice", ["sub": .string("alice")])
            try await hub.setRules(tenant: tenant, source: Self.ownerRules + "\nDoc fields: ownerID, text\n")
            try await admin.database.write { tx in
                for id in 1 ... 4 { try tx.insert(OwnedDoc(id: id, ownerID: id <= 2 ? "alice" : "bob", text: "t")) }
            }
            try await admin.exchange()
            let epoch = try await Self.epoch(hub, alice)
            let bobs = HubSubscriptions.Entry(type: "Doc", filter: .oneOf(field: "ownerID", values: [.string("bob")]))
            let all = HubSubscriptions.Entry(type: "Doc", filter: .oneOf(field: "text", values: [.string("t")]))
            for entry in [bobs, all] {
                let firstPulled = try ChangesetCodec.decode(
                    try await hub.firstPull(
                        device: alice.device, subscription: entry, upto: 100, after: [], epoch: epoch, limit: 100))
                let pulled = try ChangesetCodec.decode(
                    try await hub.pull(
                        device: alice.device, since: 0, after: 0, epoch: epoch, limit: 100,
                        subscriptions: HubSubscriptions(entries: [entry])))
                let expected: [Value] = entry == bobs ? [] : [.int(1), .int(2)]
                #expect(firstPulled.entries.map(\.key) == expected)
                #expect(pulled.entries.map(\.key) == expected)
            }
        }
    }

    static func epoch(_ hub: Hub, _ device: RuledDevice) async throws -> UUID {
        try await hub.session(device: device.device, site: try device.database.sync.site).epoch
    }

    /// A write outside the rules is refused per object, and the rest of
    /// the push merges: a new object for someone else, an edit of someone
    /// else's object, and an object given away.
    @Test func aWriteOutsideTheRulesIsRefusedPerObject() async throws {
        try await Self.withTenant { hub, tenant, device in
            let alice = try await device("alice", ["sub": .string("alice")])
            let bob = try await device("bob", ["sub": .string("bob")])
            try await hub.setRules(tenant: tenant, source: Self.ownerRules)
            try await bob.database.write { tx in try tx.insert(OwnedDoc(id: 10, ownerID: "bob", text: "bob's")) }
            #expect(try await bob.exchange().isEmpty)
            try await alice.database.write { tx in
                try tx.insert(OwnedDoc(id: 1, ownerID: "alice", text: "mine"))
                try tx.insert(OwnedDoc(id: 2, ownerID: "bob", text: "planted"))
                // Bob's document, which Alice cannot read, written blind.
                try tx.insert(OwnedDoc(id: 10, ownerID: "alice", text: "taken"))
            }
            let refused = try await alice.exchange()
            #expect(refused == [HubRefusedObject(type: "Doc", key: "10"), HubRefusedObject(type: "Doc", key: "2")])
            try await bob.exchange()
            #expect(try await bob.docIDs() == [10])
            #expect(try await bob.database.read { try $0.object(OwnedDoc.self, primaryKey: 10)?.text } == "bob's")
            // Giving her own document away is a write whose result she may
            // not write: refused, and the hub keeps it hers.
            try await alice.database.write { tx in
                try tx.update("Doc", key: 1, ["ownerID": .string("bob"), "text": .string("for bob")])
            }
            #expect(try await alice.exchange() == [HubRefusedObject(type: "Doc", key: "1")])
            try await bob.exchange()
            #expect(try await bob.docIDs() == [10])
            let carol = try await device("carol", ["sub": .string("alice")])
            try await carol.exchange()
            #expect(try await carol.database.read { try $0.object(OwnedDoc.self, primaryKey: 1)?.text } == "mine")
        }
    }

    /// A device whose claims make its write rule of a type `true` writes
    /// it with no test of its objects: nothing of it is refused, the values
    /// the read rule compares are still copied (so a reader sees what it
    /// wrote, as it wrote it), and a type it may not write is still refused
    /// object by object, alone in a push or beside the others.
    @Test func aDeviceFreeToWriteATypeIsStillRefusedTheTypesItMayNotWrite() async throws {
        try await Self.withTenant { hub, tenant, device in
            let editor = try await device("editor", ["sub": .string("editor")])
            let alice = try await device("alice", ["sub": .string("alice")])
            try await hub.setRules(
                tenant: tenant,
                source: """
                    Doc read: ownerID = claims.sub
                    Doc write: true
                    Project read: true
                    Project write: 'admin' in claims.roles
                    """)
            try await editor.database.write { tx in
                for id in 1 ... 4 {
                    try tx.insert(OwnedDoc(id: id, ownerID: id <= 2 ? "alice" : "bob", text: "t\(id)"))
                }
            }
            #expect(try await editor.exchange().isEmpty)
            #expect(try await Self.ruledValues(hub, fields: ["ownerID"]) == [4, 0])
            try await alice.exchange()
            #expect(try await alice.docIDs() == [1, 2])
            // A document given to Alice arrives whole; one written again
            // with the owner it has changes nothing she reads.
            try await editor.database.write { tx in
                try tx.update("Doc", key: 3, ["ownerID": .string("alice")])
                try tx.update("Doc", key: 1, ["ownerID": .string("alice"), "text": .string("again")])
            }
            #expect(try await editor.exchange().isEmpty)
            #expect(try await Self.ruledValues(hub, fields: ["ownerID"]) == [4, 0])
            try await alice.exchange()
            #expect(try await alice.docIDs() == [1, 2, 3])
            #expect(try await alice.database.read { try $0.object(OwnedDoc.self, primaryKey: 3)?.text } == "t3")
            #expect(try await alice.database.read { try $0.object(OwnedDoc.self, primaryKey: 1)?.text } == "again")
            try await editor.database.write { tx in
                try tx.insert(RuledProject(id: "p1", name: "beside a document"))
                try tx.insert(OwnedDoc(id: 5, ownerID: "alice", text: "t5"))
            }
            #expect(try await editor.exchange() == [HubRefusedObject(type: "Project", key: "p1")])
            try await editor.database.write { tx in try tx.insert(RuledProject(id: "p2", name: "alone")) }
            #expect(try await editor.exchange() == [HubRefusedObject(type: "Project", key: "p2")])
            #expect(try await Self.ruledValues(hub, fields: ["ownerID"]) == [5, 0])
            try await alice.exchange()
            #expect(try await alice.docIDs() == [1, 2, 3, 5])
            #expect(try await alice.database.read { try $0.objects(RuledProject.self).count } == 0)
        }
    }

    /// The rows of `sync_attrs` for `fields`, then how many of them (or
    /// of the registers of those fields) have no twin of the same value.
    static func ruledValues(_ hub: Hub, fields: [String]) async throws -> [Int64] {
        let rows = try await hub.client.query(
            """
            SELECT count(a.field)::int8, count(*) FILTER (WHERE a.value IS DISTINCT FROM f.value)::int8
            FROM fields f FULL JOIN sync_attrs a ON a.tenant_id = f.tenant_id AND a.type_name = f.type_name
             AND a.object_key = f.object_key AND a.field = f.path
            WHERE coalesce(a.field, f.path) = ANY(\(fields)::text[])
            """, logger: TestCluster.logger)
        for try await (count, wrong) in rows.decode((Int64, Int64).self) { return [count, wrong] }
        return []
    }

    /// A Project's Tasks follow it: a device reads the tasks of the
    /// projects its claims name, and writes tasks only into them.
    @Test func linkedObjectsFollowTheObjectTheyLinkTo() async throws {
        try await Self.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let member = try await device("member", ["projects": .array([.string("p1"), .string("p3")])])
            try await hub.setRules(
                tenant: tenant,
                source: """
                    Project read: id in claims.projects or 'admin' in claims.roles
                    Project write: 'admin' in claims.roles
                    Task: project in Project or 'admin' in claims.roles
                    """)
            try await admin.database.write { tx in
                for id in ["p1", "p2"] { try tx.insert(RuledProject(id: id, name: id)) }
                try tx.insert(RuledTask(id: 1, project: Link("p1"), title: "in p1"))
                try tx.insert(RuledTask(id: 2, project: Link("p2"), title: "in p2"))
                try tx.insert(RuledTask(id: 3, project: nil, title: "in none"))
            }
            #expect(try await admin.exchange().isEmpty)
            try await member.exchange()
            #expect(try await member.database.read { try $0.objects(RuledProject.self).map(\.id) } == ["p1"])
            #expect(try await member.database.read { try $0.objects(RuledTask.self).map(\.id) } == [1])
            try await member.database.write { tx in
                try tx.insert(RuledTask(id: 4, project: Link("p1"), title: "added to p1"))
                // p2 exists on the hub, where the member cannot read it.
                try tx.insert(RuledProject(id: "p2", name: "written blind"))
                try tx.insert(RuledTask(id: 5, project: Link("p2"), title: "pushed into p2"))
                try tx.insert(RuledProject(id: "p3", name: "made by a member"))
            }
            let refused = try await member.exchange()
            #expect(
                refused == [
                    HubRefusedObject(type: "Project", key: "p2"), HubRefusedObject(type: "Project", key: "p3"),
                    HubRefusedObject(type: "Task", key: "5"),
                ])
            try await admin.exchange()
            #expect(try await admin.database.read { try $0.objects(RuledTask.self).map(\.id) } == [1, 2, 3, 4])
            #expect(try await admin.database.read { try $0.objects(RuledProject.self).map(\.name) } == ["p1", "p2"])
        }
    }

    /// Rules set on a dataset that already has objects read their values
    /// at once; rules taken away open the dataset again.
    @Test func rulesSetLaterApplyToWhatIsThereAndCanBeTakenAway() async throws {
        try await Self.withTenant { hub, tenant, device in
            let writer = try await device("writer", ["sub": .string("w")])
            try await writer.database.write { tx in
                for id in 1 ... 4 { try tx.insert(OwnedDoc(id: id, ownerID: id <= 2 ? "alice" : "bob")) }
            }
            #expect(try await writer.exchange().isEmpty)
            #expect(try await hub.rules(tenant: tenant) == HubRulesVersion(version: 0, source: nil))
            #expect(try await hub.setRules(tenant: tenant, source: Self.ownerRules) == 1)
            #expect(try await hub.rules(tenant: tenant) == HubRulesVersion(version: 1, source: Self.ownerRules))
            let alice = try await device("alice", ["sub": .string("alice")])
            try await alice.exchange()
            #expect(try await alice.docIDs() == [1, 2])
            #expect(try await hub.setRules(tenant: tenant, source: nil) == 2)
            let open = try await device("open", [:])
            try await open.exchange()
            #expect(try await open.docIDs() == [1, 2, 3, 4])
            // Refused: rules that do not parse, and a tenant the hub lacks.
            await #expect(throws: HubError.self) { try await hub.setRules(tenant: tenant, source: "Doc: (") }
            #expect(try await hub.rules(tenant: tenant).version == 2)
            await #expect(throws: HubError.self) { try await hub.setRules(tenant: UUID(), source: "Doc: true") }
        }
    }

    /// A rule on a field that holds a long value (past what an index
    /// entry holds) compares its digest.
    @Test func aRuleComparesLongValuesToo() async throws {
        try await Self.withTenant { hub, tenant, device in
            let long = String(repeating: "owner-", count: 400)
            let owner = try await device("owner", ["sub": .string(long)])
            let other = try await device("other", ["sub": .string(long + "x")])
            try await hub.setRules(tenant: tenant, source: "Doc: ownerID = claims.sub")
            try await owner.database.write { tx in try tx.insert(OwnedDoc(id: 1, ownerID: long)) }
            #expect(try await owner.exchange().isEmpty)
            try await other.exchange()
            #expect(try await other.docIDs() == [])
            let again = try await device("again", ["sub": .string(long)])
            try await again.exchange()
            #expect(try await again.docIDs() == [1])
        }
    }
}
