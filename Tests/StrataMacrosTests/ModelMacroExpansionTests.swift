import StrataMacros
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite struct ModelMacroExpansionTests {
    @Test func storedPropertiesBecomeTheSchemaInDeclarationOrder() {
        expectExpansion(
            """
            @Model
            struct Person {
                @PrimaryKey var id: Int
                var name: String
                @Indexed var age: Int
                var initials: String { String(name.prefix(1)) }
                static var count = 0
                lazy var cache: String = ""
                var note: String = "" {
                    didSet { print(note) }
                }
            }
            """,
            """
            struct Person {
                var id: Int
                var name: String
                var age: Int
                var initials: String { String(name.prefix(1)) }
                static var count = 0
                lazy var cache: String = ""
                var note: String = "" {
                    didSet { print(note) }
                }
            }

            extension Person: Strata.Model {
                typealias Key = Int

                static let storedTypeName = "Person"

                static let schema = Strata.ModelSchema<Person>(
                    name: "Person",
                    properties: [
                        .init(\\Person.id, "id", primaryKey: true),
                        .init(\\Person.name, "name"),
                        .init(\\Person.age, "age", indexed: true),
                        .init(\\Person.note, "note", default: ""),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                    encoder.encode(self.name)
                    encoder.encode(self.age)
                    encoder.encode(self.note)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(Int.self)
                    self.name = try decoder.decode(String.self)
                    self.age = try decoder.decode(Int.self)
                    self.note = try decoder.decode(String.self)
                }
            }
            """)
    }

    @Test func storedNameCanDifferFromTheStructName() {
        expectExpansion(
            """
            @Model(name: "Person")
            struct PersonV1 {
                @PrimaryKey var id: String
            }
            """,
            """
            struct PersonV1 {
                var id: String
            }

            extension PersonV1: Strata.Model {
                typealias Key = String

                static let storedTypeName = "Person"

                static let schema = Strata.ModelSchema<PersonV1>(
                    name: "Person",
                    properties: [
                        .init(\\PersonV1.id, "id", primaryKey: true),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(String.self)
                }
            }
            """)
    }

    @Test func publicStructGetsPublicMembers() {
        expectExpansion(
            """
            @Model
            public struct Tag {
                public var label: String
            }
            """,
            """
            public struct Tag {
                public var label: String
            }

            extension Tag: Strata.Model {
                public typealias Key = Int64

                public static let storedTypeName = "Tag"

                public static let schema = Strata.ModelSchema<Tag>(
                    name: "Tag",
                    properties: [
                        .init(\\Tag.label, "label"),
                    ]
                )

                public func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.label)
                }

                public init(from decoder: inout Strata.ModelDecoder) throws {
                    self.label = try decoder.decode(String.self)
                }
            }
            """)
    }

    @Test func literalInitialValuesAreSchemaDefaultsAndInferTheirType() {
        expectExpansion(
            """
            @Model
            struct Settings {
                var count: Int = 3
                var offset: Int64 = -7
                var ratio: Double = 0.5
                var below = -1.25
                var title: String = "untitled"
                var enabled: Bool = true
                var inferred = 42
                var word = "hi"
                var flag = false
                var created: Date = Date()
                var nickname: String? = nil
                var raw: String = #"a\\b"#
            }
            """,
            """
            struct Settings {
                var count: Int = 3
                var offset: Int64 = -7
                var ratio: Double = 0.5
                var below = -1.25
                var title: String = "untitled"
                var enabled: Bool = true
                var inferred = 42
                var word = "hi"
                var flag = false
                var created: Date = Date()
                var nickname: String? = nil
                var raw: String = #"a\\b"#
            }

            extension Settings: Strata.Model {
                typealias Key = Int64

                static let storedTypeName = "Settings"

                static let schema = Strata.ModelSchema<Settings>(
                    name: "Settings",
                    properties: [
                        .init(\\Settings.count, "count", default: 3),
                        .init(\\Settings.offset, "offset", default: -7),
                        .init(\\Settings.ratio, "ratio", default: 0.5),
                        .init(\\Settings.below, "below", default: -1.25),
                        .init(\\Settings.title, "title", default: "untitled"),
                        .init(\\Settings.enabled, "enabled", default: true),
                        .init(\\Settings.inferred, "inferred", default: 42),
                        .init(\\Settings.word, "word", default: "hi"),
                        .init(\\Settings.flag, "flag", default: false),
                        .init(\\Settings.created, "created"),
                        .init(\\Settings.nickname, "nickname"),
                        .init(\\Settings.raw, "raw", default: #"a\\b"#),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.count)
                    encoder.encode(self.offset)
                    encoder.encode(self.ratio)
                    encoder.encode(self.below)
                    encoder.encode(self.title)
                    encoder.encode(self.enabled)
                    encoder.encode(self.inferred)
                    encoder.encode(self.word)
                    encoder.encode(self.flag)
                    encoder.encode(self.created)
                    encoder.encode(self.nickname)
                    encoder.encode(self.raw)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.count = try decoder.decode(Int.self)
                    self.offset = try decoder.decode(Int64.self)
                    self.ratio = try decoder.decode(Double.self)
                    self.below = try decoder.decode(Double.self)
                    self.title = try decoder.decode(String.self)
                    self.enabled = try decoder.decode(Bool.self)
                    self.inferred = try decoder.decode(Int.self)
                    self.word = try decoder.decode(String.self)
                    self.flag = try decoder.decode(Bool.self)
                    self.created = try decoder.decode(Date.self)
                    self.nickname = try decoder.decode(String?.self)
                    self.raw = try decoder.decode(String.self)
                }
            }
            """)
    }

    @Test func transientPropertiesAreNotStored() {
        expectExpansion(
            """
            @Model
            struct Row {
                @PrimaryKey var id: UUID
                @Transient var isSelected = false
                @Transient var cache: [String]?
                @Transient let label: Optional<String>
                @Transient let kind = "row"
            }
            """,
            """
            struct Row {
                var id: UUID
                var isSelected = false
                var cache: [String]?
                let label: Optional<String>
                let kind = "row"
            }

            extension Row: Strata.Model {
                typealias Key = UUID

                static let storedTypeName = "Row"

                static let schema = Strata.ModelSchema<Row>(
                    name: "Row",
                    properties: [
                        .init(\\Row.id, "id", primaryKey: true),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(UUID.self)
                    self.cache = nil
                    self.label = nil
                }
            }
            """)
    }

    @Test func renamedPropertyGetsItsOriginalName() {
        expectExpansion(
            """
            @Model
            struct Person {
                @PrimaryKey var id: Int
                @Renamed(from: "mail") var email: String = ""
            }
            """,
            """
            struct Person {
                var id: Int
                var email: String = ""
            }

            extension Person: Strata.Model {
                typealias Key = Int

                static let storedTypeName = "Person"

                static let schema = Strata.ModelSchema<Person>(
                    name: "Person",
                    properties: [
                        .init(\\Person.id, "id", primaryKey: true),
                        .init(\\Person.email, "email", default: "", originalName: "mail"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                    encoder.encode(self.email)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(Int.self)
                    self.email = try decoder.decode(String.self)
                }
            }
            """)
    }

    @Test func optionalsAndQualifiedTypesAreSupported() {
        expectExpansion(
            """
            @Model
            struct Event {
                var at: Foundation.Date
                var end: Date?
                var payload: Optional<Data>
                var id: Swift.Optional<Foundation.UUID>
                var count: Swift.Int64
            }
            """,
            """
            struct Event {
                var at: Foundation.Date
                var end: Date?
                var payload: Optional<Data>
                var id: Swift.Optional<Foundation.UUID>
                var count: Swift.Int64
            }

            extension Event: Strata.Model {
                typealias Key = Int64

                static let storedTypeName = "Event"

                static let schema = Strata.ModelSchema<Event>(
                    name: "Event",
                    properties: [
                        .init(\\Event.at, "at"),
                        .init(\\Event.end, "end"),
                        .init(\\Event.payload, "payload"),
                        .init(\\Event.id, "id"),
                        .init(\\Event.count, "count"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.at)
                    encoder.encode(self.end)
                    encoder.encode(self.payload)
                    encoder.encode(self.id)
                    encoder.encode(self.count)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.at = try decoder.decode(Foundation.Date.self)
                    self.end = try decoder.decode(Date?.self)
                    self.payload = try decoder.decode(Optional<Data>.self)
                    self.id = try decoder.decode(Swift.Optional<Foundation.UUID>.self)
                    self.count = try decoder.decode(Swift.Int64.self)
                }
            }
            """)
    }

    @Test func sharedAnnotationsAndBacktickedNamesAreRead() {
        expectExpansion(
            """
            @Model
            struct Point {
                var x, y: Double
                var `default`: Bool
            }
            """,
            """
            struct Point {
                var x, y: Double
                var `default`: Bool
            }

            extension Point: Strata.Model {
                typealias Key = Int64

                static let storedTypeName = "Point"

                static let schema = Strata.ModelSchema<Point>(
                    name: "Point",
                    properties: [
                        .init(\\Point.x, "x"),
                        .init(\\Point.y, "y"),
                        .init(\\Point.`default`, "default"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.x)
                    encoder.encode(self.y)
                    encoder.encode(self.`default`)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.x = try decoder.decode(Double.self)
                    self.y = try decoder.decode(Double.self)
                    self.`default` = try decoder.decode(Bool.self)
                }
            }
            """)
    }

    @Test func structAlreadyDeclaredAsModelGetsMembersOnly() {
        expectExpansion(
            """
            @Model
            struct Note: Model {
                var text: String
            }
            """,
            """
            struct Note: Model {
                var text: String
            }

            extension Note {
                typealias Key = Int64

                static let storedTypeName = "Note"

                static let schema = Strata.ModelSchema<Note>(
                    name: "Note",
                    properties: [
                        .init(\\Note.text, "text"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.text)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.text = try decoder.decode(String.self)
                }
            }
            """,
            conformances: [])
    }
}
