import Testing

@testable import Strata

@Embedded(name: "Spot") struct ResolverSpotV1 { var street: String }
@Embedded(name: "Spot") struct ResolverSpotV2 {
    var city: String = ""
    @Renamed(from: "street") var road: String
}
@Model(name: "Visit") struct ResolverVisitV1 {
    @PrimaryKey var id: Int
    var spot: ResolverSpotV1
}
@Model(name: "Visit") struct ResolverVisitV2 {
    @PrimaryKey var id: Int
    var spot: ResolverSpotV2
}

/// The versioned field resolver: which stored field a name means at a
/// schema version, across the renames the versions declare.
@Suite struct FieldResolverTests {
    typealias Names = FieldResolver.TypeNames

    static func person(_ properties: [Property]) -> ObjectSchema {
        ObjectSchema("Person", primaryKey: "id", properties: [Property("id", .int)] + properties)
    }

    static func version(_ number: UInt64, _ types: Names...) -> FieldResolver.Version {
        FieldResolver.Version(version: number, types: types)
    }

    /// A catalog of `schema` at `version`, as a file at that version has.
    static func catalog(_ schema: [ObjectSchema], at version: UInt64) -> Catalog {
        Catalog(schema: Schema(schema), schemaVersion: version)
    }

    static func catalogID(_ catalog: Catalog, _ type: String, _ property: String) throws -> PropertyID {
        try #require(catalog[type: type]?[property: property]).id
    }

    @Test func aRenameChainAcrossThreeVersionsIsOneFieldWithTheCatalogsID() throws {
        let v1 = Self.person([Property("a", .string)])
        let catalog = Self.catalog([v1], at: 1)
        let resolver = FieldResolver(
            versions: [
                Self.version(1, Names(v1)),
                Self.version(2, Names(Self.person([Property("b", .string)]), originalNames: [nil, "a"])),
                Self.version(3, Names(Self.person([Property("c", .string)]), originalNames: [nil, "b"])),
            ], catalog: catalog)
        let stored = try Self.catalogID(catalog, "Person", "a")
        #expect(resolver.fieldID(of: "Person", named: "a", at: 1) == stored)
        #expect(resolver.fieldID(of: "Person", named: "b", at: 2) == stored)
        #expect(resolver.fieldID(of: "Person", named: "c", at: 3) == stored)
        #expect(resolver.fieldID(of: "Person", named: "a", at: 3) == nil)
        #expect(resolver.names(of: "Person", "c", at: 3, since: 1) == ["a", "b", "c"])
        #expect(resolver.names(of: "Person", "c", at: 3, since: 2) == ["b", "c"])
        #expect(resolver.fieldID(of: "Person", named: "id", at: 3) == (try Self.catalogID(catalog, "Person", "id")))
    }

    @Test func aTypeRenameWithAPropertyRenameKeepsTheField() throws {
        let v1 = Self.person([Property("name", .string), Property("age", .int)])
        let catalog = Self.catalog([v1], at: 1)
        let human = ObjectSchema(
            "Human", primaryKey: "id",
            properties: [Property("id", .int), Property("fullName", .string), Property("age", .int)])
        let declared = FieldResolver(
            versions: [
                Self.version(1, Names(v1)),
                Self.version(2, Names(human, previousName: "Person", originalNames: [nil, "name", nil])),
            ], catalog: catalog)
        // The same rename done by a migration's renameType, which no
        // version declares.
        let migrated = FieldResolver(
            versions: [Self.version(1, Names(v1)), Self.version(2, Names(human, originalNames: [nil, "name", nil]))],
            catalog: catalog, renamedTypes: ["Human": "Person"])
        let unrelated = FieldResolver(
            versions: [Self.version(1, Names(v1)), Self.version(2, Names(human, originalNames: [nil, "name", nil]))],
            catalog: catalog)
        for (property, before) in [("fullName", "name"), ("age", "age"), ("id", "id")] {
            let stored = try Self.catalogID(catalog, "Person", before)
            #expect(declared.fieldID(of: "Human", named: property, at: 2) == stored)
            #expect(migrated.fieldID(of: "Human", named: property, at: 2) == stored)
            #expect(unrelated.fieldID(of: "Human", named: property, at: 2) != stored)
        }
        #expect(declared.fieldID(of: "Person", named: "name", at: 2) == nil)
        #expect(declared.names(of: "Human", "fullName", at: 2, since: 1) == ["name", "fullName"])
    }

    @Test func aNameReusedAfterARemovalIsAnotherField() throws {
        let v1 = Self.person([Property("nick", .string)])
        let catalog = Self.catalog([v1], at: 1)
        let resolver = FieldResolver(
            versions: [
                Self.version(1, Names(v1)),
                Self.version(2, Names(Self.person([]))),
                Self.version(3, Names(Self.person([Property("nick", .string)]))),
            ], catalog: catalog)
        let reused = try #require(resolver.fieldID(of: "Person", named: "nick", at: 3))
        #expect(reused != (try Self.catalogID(catalog, "Person", "nick")))
        #expect(resolver.fieldID(of: "Person", named: "nick", at: 2) == nil)
        #expect(resolver.names(of: "Person", "nick", at: 3, since: 1) == [])
        #expect(resolver.names(of: "Person", "nick", at: 3, since: 3) == ["nick"])
    }

    @Test func aNameFreedByARenameInTheSameVersionIsAnotherField() throws {
        let v1 = Self.person([Property("a", .string)])
        let catalog = Self.catalog([v1], at: 1)
        let resolver = FieldResolver(
            versions: [
                Self.version(1, Names(v1)),
                Self.version(
                    2,
                    Names(
                        Self.person([Property("a", .string), Property("b", .string)]), originalNames: [nil, nil, "a"])),
            ], catalog: catalog)
        let stored = try Self.catalogID(catalog, "Person", "a")
        #expect(resolver.fieldID(of: "Person", named: "b", at: 2) == stored)
        #expect(resolver.fieldID(of: "Person", named: "a", at: 2) != stored)
    }

    @Test func aChangedValueTypeIsAnotherField() throws {
        let v1 = Self.person([Property("age", .string)])
        let catalog = Self.catalog([v1], at: 1)
        let resolver = FieldResolver(
            versions: [Self.version(1, Names(v1)), Self.version(2, Names(Self.person([Property("age", .int)])))],
            catalog: catalog)
        #expect(resolver.fieldID(of: "Person", named: "age", at: 2) != (try Self.catalogID(catalog, "Person", "age")))
    }

    @Test func aTypeAVersionLeavesOutKeepsItsFields() throws {
        let v1 = Self.person([Property("a", .string)])
        let other = ObjectSchema("Other", properties: [Property("x", .int)])
        let catalog = Self.catalog([v1], at: 1)
        let resolver = FieldResolver(
            versions: [Self.version(1, Names(v1)), Self.version(2, Names(other)), Self.version(3, Names(v1))],
            catalog: catalog)
        #expect(resolver.fieldID(of: "Person", named: "a", at: 3) == (try Self.catalogID(catalog, "Person", "a")))
        #expect(resolver.fieldID(of: "Person", named: "a", at: 2) == nil)
    }

    @Test func anEmbeddedTypesRenamesAreFollowed() throws {
        let address1 = ObjectSchema("Address", embedded: true, properties: [Property("street", .string)])
        let address2 = ObjectSchema(
            "Address", embedded: true, properties: [Property("city", .string), Property("road", .string)])
        let owner = Self.person([.embedded("home", "Address", optional: false)])
        let catalog = Self.catalog([owner, address1], at: 1)
        let resolver = FieldResolver(
            versions: [
                Self.version(1, Names(owner), Names(address1)),
                Self.version(2, Names(owner), Names(address2, originalNames: [nil, "street"])),
            ], catalog: catalog)
        let street = try Self.catalogID(catalog, "Address", "street")
        #expect(resolver.fieldID(of: "Address", named: "road", at: 2) == street)
        #expect(resolver.fieldID(of: "Person", named: "home", at: 2) == (try Self.catalogID(catalog, "Person", "home")))
        // The layout's shape (the catalog's, by id) pairs with the shape
        // of version 2's embedded type: the added city has no source.
        let stored = RecordShape(try #require(catalog[type: "Address"]))
        let later = resolver.shape(of: "Address", address2.properties, at: 2)
        #expect(stored.sourcePositions(in: later) == [-1, 0])
        #expect(later.position(of: "road") == 1)
        #expect(later.position(ofField: street) == 1)
    }

    @Test func shapesPairFieldsByIDInTheirOwnOrder() throws {
        let v1 = Self.person([Property("first", .string), Property("age", .int)])
        let catalog = Self.catalog([v1], at: 1)
        let v2 = Self.person([
            Property("email", .string, optional: true), Property("age", .int), Property("given", .string),
        ])
        let resolver = FieldResolver(
            versions: [
                Self.version(1, Names(v1)), Self.version(2, Names(v2, originalNames: [nil, nil, nil, "first"])),
            ],
            catalog: catalog)
        let table = RecordShape(try #require(catalog[type: "Person"]))
        #expect(table.fields.map(\.name) == ["id", "first", "age"])
        let model = resolver.shape(of: "Person", v2.properties + [Property("unknown", .int)], at: 2)
        #expect(table.sourcePositions(in: model) == [0, -1, 2, 1, -1])
        #expect(model.fields[4].id == RecordShape.unresolved)
        // The added email has an id of its own, which no catalog id equals.
        let email = try #require(resolver.fieldID(of: "Person", named: "email", at: 2))
        #expect(!(catalog[type: "Person"]?.properties.contains { $0.id == email } ?? true))
        #expect(model.sourcePositions(in: table) == [0, 3, 2])
    }

    @Test func withoutDeclaredVersionsTheCatalogsNamesAnswer() throws {
        let v3 = Self.person([Property("a", .string)])
        let catalog = Self.catalog([v3], at: 3)
        let resolver = FieldResolver(versions: [], catalog: catalog)
        #expect(resolver.versions == [3])
        #expect(resolver.fieldID(of: "Person", named: "a", at: 3) == (try Self.catalogID(catalog, "Person", "a")))
        #expect(resolver.fieldID(of: "Person", named: "a", at: 2) == nil)
    }

    @Test func aDeclaredVersionGivesTheRenamesOfItsEmbeddedTypes() throws {
        let v1 = VersionDeclaration(version: 1, name: "V1", models: [ResolverVisitV1.declaration])
        let v2 = VersionDeclaration(version: 2, name: "V2", models: [ResolverVisitV2.declaration])
        let catalog = Catalog(schema: v1.schema, schemaVersion: 1)
        let resolver = FieldResolver(versions: [v1.names, v2.names], catalog: catalog)
        #expect(v2.names.types.map(\.name) == ["Visit", "Spot"])
        #expect(resolver.fieldID(of: "Spot", named: "road", at: 2) == (try Self.catalogID(catalog, "Spot", "street")))
        #expect(resolver.fieldID(of: "Visit", named: "spot", at: 2) == (try Self.catalogID(catalog, "Visit", "spot")))
        #expect(resolver.names(of: "Spot", "road", at: 2, since: 1) == ["street", "road"])
    }

    /// Synced mode: v1 has `a`, v2 removes it (kept), v3 adds it again (a
    /// field of its own). Each app version's `a` pairs with its own field,
    /// an older app's too, and a changed value type keeps a name where a
    /// removal does not.
    @Test func eachVersionOfANameAddedAgainPairsWithItsOwnField() throws {
        let v1 = Self.person([Property("a", .int)])
        let v2 = Self.person([])
        let v3 = Self.person([Property("a", .int)])
        let declared = [Self.version(1, Names(v1)), Self.version(2, Names(v2)), Self.version(3, Names(v3))]
        var catalog = Catalog(schema: Schema([v1]), schemaVersion: 1, mode: .synced)
        let first = try Self.catalogID(catalog, "Person", "a")
        for (version, schema) in [(UInt64(2), v2), (3, v3)] {
            let pairing = catalog.pairing(with: Schema([schema]), at: version, declared: declared)
            catalog = catalog.evolved(to: Schema([schema]), schemaVersion: version, mode: .synced, pairing: pairing)
        }
        let second = try Self.catalogID(catalog, "Person", "a")
        #expect(second != first)
        #expect(catalog[type: "Person"]?.keptProperties.map(\.id) == [first])
        let now = catalog.pairing(with: Schema([v3]), at: 3, declared: declared)
        #expect(now.field("Person", "a") == second)
        let older = catalog.pairing(with: Schema([v1]), at: 1, declared: Array(declared.prefix(1)))
        #expect(older.field("Person", "a") == first)
        // From the catalog's version 1 to 3, with another type at 3.
        let file = Self.catalog([v1], at: 1)
        let text = Self.person([Property("a", .string)])
        #expect(
            !file.pairing(with: Schema([text]), at: 3, declared: declared.dropLast() + [Self.version(3, Names(text))])
                .keepsName("Person", "a"))
        #expect(file.pairing(with: Schema([text]), at: 3, declared: []).keepsName("Person", "a"))
        #expect(file.pairing(with: Schema([text]), at: 3, declared: []).field("Person", "a") == nil)
    }
}
