import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// `@Embedded` structs, link properties and `@Relationship(deleteRule:)`:
/// what the macros write, and what they refuse.
@Suite struct RelationshipMacroTests {
    // MARK: Expansions

    @Test func embeddedStructBecomesAnEmbeddedModelReadByPosition() {
        expectExpansion(
            """
            @Embedded
            struct Address {
                var street: String
                var city: String = "Leeds"
                var geo: Geo?
                var lines: [String] = []
            }
            """,
            """
            struct Address {
                var street: String
                var city: String = "Leeds"
                var geo: Geo?
                var lines: [String] = []
            }

            extension Address: Strata.EmbeddedModel {
                static let storedTypeName = "Address"

                static let schema = Strata.ModelSchema<Address>(
                    name: "Address",
                    embedded: true,
                    properties: [
                        .init(\\Address.street, "street"),
                        .init(\\Address.city, "city", default: "Leeds"),
                        Strata._ModelMacroSupport.property(\\Address.geo, "geo"),
                        .init(\\Address.lines, "lines"),
                    ]
                )

                var propertyValue: Strata.Value {
                    .object(["street": Strata.Value(self.street), "city": Strata.Value(self.city), "geo": Strata._ModelMacroSupport.value(self.geo), "lines": Strata.Value(self.lines)])
                }

                init?(propertyValue value: Strata.Value) {
                    guard let fields = Strata.EmbeddedFields(value, of: Address.self),
                        let v0 = fields.decode(String.self, at: 0),
                        let v1 = fields.decode(String.self, at: 1),
                        let v2 = Strata._ModelMacroSupport.decode(fields, \\Address.geo, at: 2),
                        let v3 = fields.decode([String].self, at: 3)
                    else {
                        return nil
                    }
                    self.street = v0
                    self.city = v1
                    self.geo = v2
                    self.lines = v3
                }

                private static func _strataCheckStoredTypes() {
                    \(uncheckedTypeAttribute("geo", of: "Address", type: "Geo?"))
                    func storedType<V>(geo: KeyPath<Address, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(geo: KeyPath<Address, V>) {
                    }
                    storedType(geo: \\.geo)
                }
            }
            """, conformances: ["EmbeddedModel"])
    }

    @Test func embeddedWithANameStoresThatName() {
        expectExpansion(
            """
            @Embedded(name: "Geo")
            public struct GeoV2 {
                public var lat: Double
                @Transient var cached: String?
            }
            """,
            """
            public struct GeoV2 {
                public var lat: Double
                var cached: String?
            }

            extension GeoV2 {
                public static let storedTypeName = "Geo"

                public static let schema = Strata.ModelSchema<GeoV2>(
                    name: "Geo",
                    embedded: true,
                    properties: [
                        .init(\\GeoV2.lat, "lat"),
                    ]
                )

                public var propertyValue: Strata.Value {
                    .object(["lat": Strata.Value(self.lat)])
                }

                public init?(propertyValue value: Strata.Value) {
                    guard let fields = Strata.EmbeddedFields(value, of: GeoV2.self),
                        let v0 = fields.decode(Double.self, at: 0)
                    else {
                        return nil
                    }
                    self.lat = v0
                    self.cached = nil
                }
            }
            """, conformances: [])
    }

    @Test func linksListsOfLinksAndDeleteRulesEnterTheSchema() {
        expectExpansion(
            """
            @Model
            struct Dog {
                @PrimaryKey var name: String
                var owner: Link<Person>?
                @Relationship(deleteRule: .cascade) var home: Strata.Link<House>?
                @Relationship(deleteRule: .deny) var vets: [Link<Vet>] = []
                var friends: [Link<Dog>]
                var address: Address?
                var past: [Address] = []
            }
            """,
            """
            struct Dog {
                var name: String
                var owner: Link<Person>?
                var home: Strata.Link<House>?
                var vets: [Link<Vet>] = []
                var friends: [Link<Dog>]
                var address: Address?
                var past: [Address] = []
            }

            extension Dog: Strata.Model {
                typealias Key = String

                static let storedTypeName = "Dog"

                static let schema = Strata.ModelSchema<Dog>(
                    name: "Dog",
                    properties: [
                        .init(\\Dog.name, "name", primaryKey: true),
                        .init(\\Dog.owner, "owner"),
                        .init(\\Dog.home, "home", onDelete: .cascade),
                        .init(\\Dog.vets, "vets", onDelete: .deny),
                        .init(\\Dog.friends, "friends"),
                        Strata._ModelMacroSupport.property(\\Dog.address, "address"),
                        Strata._ModelMacroSupport.property(\\Dog.past, "past"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.name)
                    encoder.encode(self.owner)
                    encoder.encode(self.home)
                    encoder.encode(self.vets)
                    encoder.encode(self.friends)
                    Strata._ModelMacroSupport.encode(self.address, to: &encoder)
                    Strata._ModelMacroSupport.encode(self.past, to: &encoder)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.name = try decoder.decode(String.self)
                    self.owner = try decoder.decode()
                    self.home = try decoder.decode()
                    self.vets = try decoder.decode()
                    self.friends = try decoder.decode()
                    self.address = try Strata._ModelMacroSupport.decode(from: &decoder)
                    self.past = try Strata._ModelMacroSupport.decode(from: &decoder)
                }

                private static func _strataCheckStoredTypes() {
                    \(uncheckedTypeAttribute("address", of: "Dog", type: "Address?"))
                    func storedType<V>(address: KeyPath<Dog, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(address: KeyPath<Dog, V>) {
                    }
                    storedType(address: \\.address)
                    \(uncheckedTypeAttribute("past", of: "Dog", type: "[Address]"))
                    func storedType<V>(past: KeyPath<Dog, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(past: KeyPath<Dog, V>) {
                    }
                    storedType(past: \\.past)
                }
            }
            """)
    }

    /// In `extension V1.Person`, a name resolves from the file's scope,
    /// where `Person` and `Address` are not found: the extension names the
    /// struct by its qualified name and leaves the property types to
    /// inference, and `V1.Address` is taken for an embedded struct.
    @Test func aModelNestedInANamespaceSpellsNoTypeTheExtensionCannotFind() {
        expectExpansion(
            """
            enum V1 {
                @Model
                struct Person {
                    @PrimaryKey var id: Int
                    var best: Link<Person>?
                    var home: V1.Address
                }
            }
            """,
            """
            enum V1 {
                struct Person {
                    var id: Int
                    var best: Link<Person>?
                    var home: V1.Address
                }
            }

            extension V1.Person: Strata.Model {
                typealias Key = Int

                static let storedTypeName = "Person"

                static let schema = Strata.ModelSchema<V1.Person>(
                    name: "Person",
                    properties: [
                        .init(\\V1.Person.id, "id", primaryKey: true),
                        .init(\\V1.Person.best, "best"),
                        Strata._ModelMacroSupport.property(\\V1.Person.home, "home"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                    encoder.encode(self.best)
                    Strata._ModelMacroSupport.encode(self.home, to: &encoder)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(Int.self)
                    self.best = try decoder.decode()
                    self.home = try Strata._ModelMacroSupport.decode(from: &decoder)
                }

                private static func _strataCheckStoredTypes() {
                    \(uncheckedTypeAttribute("home", of: "Person", type: "V1.Address"))
                    func storedType<V>(home: KeyPath<V1.Person, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(home: KeyPath<V1.Person, V>) {
                    }
                    storedType(home: \\.home)
                }
            }
            """)
    }

    // MARK: Diagnostics

    @Test func anEmbeddedStructHasNoPrimaryKeyAndNoIndexes() {
        expectExpansion(
            """
            @Embedded
            struct Address {
                @PrimaryKey var id: Int
                @Indexed var street: String
            }
            """,
            """
            struct Address {
                var id: Int
                var street: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "embeddedMarker"),
                    message:
                        "'id' is in an @Embedded struct, which has no primary key and no indexes: its objects are stored inside their parent's record. Remove @PrimaryKey.",
                    line: 3, column: 5),
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "embeddedMarker"),
                    message:
                        "'street' is in an @Embedded struct, which has no primary key and no indexes: its objects are stored inside their parent's record. Remove @Indexed.",
                    line: 4, column: 5),
            ], conformances: ["EmbeddedModel"])
    }

    @Test func anEmbeddedStructHoldsNoLinks() {
        expectExpansion(
            """
            @Embedded
            struct Address {
                var owner: Link<Person>?
                var neighbours: [Link<Person>]
            }
            """,
            """
            struct Address {
                var owner: Link<Person>?
                var neighbours: [Link<Person>]
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "embeddedLink"),
                    message:
                        "'owner' is a link in an @Embedded struct; embedded objects hold no links. Put the link on the model that holds 'Address'.",
                    line: 3, column: 16),
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "embeddedLink"),
                    message:
                        "'neighbours' is a link in an @Embedded struct; embedded objects hold no links. Put the link on the model that holds 'Address'.",
                    line: 4, column: 21),
            ], conformances: ["EmbeddedModel"])
    }

    @Test func aLinkMustBeOptional() {
        expectExpansion(
            """
            @Model
            struct Dog {
                var owner: Link<Person>
            }
            """,
            """
            struct Dog {
                var owner: Link<Person>
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "requiredLink"),
                    message:
                        "Link 'owner' must be optional: it is nil when there is no target, and deleting the target can make it nil. Declare it as 'Link<Person>?'.",
                    line: 3, column: 16)
            ])
    }

    @Test func relationshipAppliesToLinksOnly() {
        expectExpansion(
            """
            @Model
            struct Dog {
                @Relationship(deleteRule: .cascade) var name: String
                @Relationship(deleteRule: .deny) var tags: [String]
            }
            """,
            """
            struct Dog {
                var name: String
                var tags: [String]
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "relationshipNotLink"),
                    message:
                        "@Relationship applies to a link (Link<Model>?) or a list of links ([Link<Model>]); 'name' is 'String'.",
                    line: 3, column: 5),
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "relationshipNotLink"),
                    message:
                        "@Relationship applies to a link (Link<Model>?) or a list of links ([Link<Model>]); 'tags' is '[String]'.",
                    line: 4, column: 5),
            ])
    }

    @Test func aListOfLinksCannotCascade() {
        expectExpansion(
            """
            @Model
            struct Person {
                @Relationship(deleteRule: .cascade) var dogs: [Link<Dog>]
                @Relationship(deleteRule: DeleteRule.cascade) var cats: [Link<Cat>] = []
            }
            """,
            """
            struct Person {
                var dogs: [Link<Dog>]
                var cats: [Link<Cat>] = []
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "cascadeList"),
                    message:
                        "A list of links cannot cascade: 'dogs' drops a deleted target (.nullify) or refuses the delete (.deny). Cascade belongs on the to-one link that points the other way.",
                    line: 3, column: 31),
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "cascadeList"),
                    message:
                        "A list of links cannot cascade: 'cats' drops a deleted target (.nullify) or refuses the delete (.deny). Cascade belongs on the to-one link that points the other way.",
                    line: 4, column: 31),
            ])
    }
}
