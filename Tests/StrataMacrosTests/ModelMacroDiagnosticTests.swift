import SwiftSyntaxMacrosGenericTestSupport
import Testing

@Suite struct ModelMacroDiagnosticTests {
    static let supported =
        "Supported types: Bool, Int, Int64, Double, String, Data, Date, UUID, Decimal, Link<Model>, an @Embedded struct, an enum with Int or String raw values that conforms to PersistableEnum, the optional of each (String? or Optional<String>), and arrays of them but optionals ([String], [Link<Dog>], [Address]). Mark it @Transient if it is not stored."

    @Test(arguments: [("class", "a class"), ("enum", "an enum"), ("actor", "an actor")])
    func modelAppliesToStructsOnly(keyword: String, kind: String) {
        expectExpansion(
            """
            @Model
            \(keyword) Thing {
            }
            """,
            """
            \(keyword) Thing {
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Model applies to a struct, and this is \(kind); declare the model as a struct.",
                    line: 2, column: 1)
            ])
    }

    @Test func genericStructIsRefused() {
        expectExpansion(
            """
            @Model
            struct Box<T> {
                var id: Int
            }
            """,
            """
            struct Box<T> {
                var id: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "@Model cannot apply to a generic struct: Swift allows no static stored property (the schema) in a generic type. Remove the generic parameters.",
                    line: 2, column: 11)
            ])
    }

    @Test func secondPrimaryKeyIsRefused() {
        expectExpansion(
            """
            @Model
            struct Person {
                @PrimaryKey var id: Int
                @PrimaryKey var code: String
            }
            """,
            """
            struct Person {
                var id: Int
                var code: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "'code' is a second @PrimaryKey of 'Person' (the first is 'id'); a model has at most one primary key.",
                    line: 4, column: 5)
            ])
    }

    @Test func primaryKeyMustBeAKeyTypeAndNotOptional() {
        expectExpansion(
            """
            @Model
            struct A {
                @PrimaryKey var id: Int?
            }
            @Model
            struct B {
                @PrimaryKey var id: Double
            }
            """,
            """
            struct A {
                var id: Int?
            }
            struct B {
                var id: Double
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "Primary key 'id' cannot be optional; declare it as 'Int'.", line: 3, column: 25),
                DiagnosticSpec(
                    message: "Primary key 'id' is of type 'Double'; a primary key must be Int, Int64, String or UUID.",
                    line: 7, column: 25),
            ])
    }

    @Test func doubleAndDataCannotBeIndexed() {
        expectExpansion(
            """
            @Model
            struct Sample {
                @Indexed var score: Double
                @Indexed var blob: Data?
            }
            """,
            """
            struct Sample {
                var score: Double
                var blob: Data?
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "Property 'score' of type 'Double' cannot be @Indexed; only Bool, Int, Int64, String, Date, UUID and Decimal properties (and their optionals) can.",
                    line: 3, column: 5),
                DiagnosticSpec(
                    message:
                        "Property 'blob' of type 'Data?' cannot be @Indexed; only Bool, Int, Int64, String, Date, UUID and Decimal properties (and their optionals) can.",
                    line: 4, column: 5),
            ])
    }

    @Test func letWithInitialValueCannotBeStored() {
        expectExpansion(
            """
            @Model
            struct Item {
                let kind: String = "item"
            }
            """,
            """
            struct Item {
                let kind: String = "item"
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "'kind' is a 'let' with an initial value, so a stored value could never be read back into it; make it 'var', or mark it @Transient if it is not stored.",
                    line: 3, column: 5)
            ])
    }

    @Test func transientNeedsAnInitialValueOrAnOptionalType() {
        expectExpansion(
            """
            @Model
            struct Item {
                var id: Int
                @Transient var cache: [String]
            }
            """,
            """
            struct Item {
                var id: Int
                var cache: [String]
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "@Transient property 'cache' is not stored, so objects read from the database need a value for it: give it an initial value or an optional type.",
                    line: 4, column: 5)
            ])
    }

    @Test func renamedTakesAStringLiteral() {
        expectExpansion(
            """
            @Model
            struct Person {
                @Renamed(from: oldName) var email: String
                @Renamed(from: "mail\\(1)") var phone: String
            }
            """,
            """
            struct Person {
                var email: String
                var phone: String
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "@Renamed(from:) takes a string literal, the name of 'email' in the previous schema version: @Renamed(from: \"oldName\").",
                    line: 3, column: 20),
                DiagnosticSpec(
                    message:
                        "@Renamed(from:) takes a string literal, the name of 'phone' in the previous schema version: @Renamed(from: \"oldName\").",
                    line: 4, column: 20),
            ])
    }

    @Test func modelNameTakesAStringLiteral() {
        expectExpansion(
            """
            @Model(name: storedName)
            struct Person {
                var id: Int
            }
            """,
            """
            struct Person {
                var id: Int
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Model(name:) takes a string literal, the stored type name: @Model(name: \"Person\").",
                    line: 1, column: 14)
            ])
    }

    @Test func unsupportedTypesNameThePropertyAndListWhatIsSupported() {
        expectExpansion(
            """
            @Model
            struct Person {
                var tags: Set<String>
                var nested: Int??
                var ratio: Float
                var count: Optional<Int?>
                var grid: [[Int]]
            }
            """,
            """
            struct Person {
                var tags: Set<String>
                var nested: Int??
                var ratio: Float
                var count: Optional<Int?>
                var grid: [[Int]]
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "Property 'tags' has type 'Set<String>', which Strata cannot store. \(Self.supported)",
                    line: 3, column: 15),
                DiagnosticSpec(
                    message: "Property 'nested' has type 'Int??', which Strata cannot store. \(Self.supported)",
                    line: 4, column: 17),
                DiagnosticSpec(
                    message: "Property 'ratio' has type 'Float', which Strata cannot store. \(Self.supported)",
                    line: 5, column: 16),
                DiagnosticSpec(
                    message: "Property 'count' has type 'Optional<Int?>', which Strata cannot store. \(Self.supported)",
                    line: 6, column: 16),
                DiagnosticSpec(
                    message: "Property 'grid' has type '[[Int]]', which Strata cannot store. \(Self.supported)",
                    line: 7, column: 15),
            ])
    }

    @Test func propertyWithoutTypeNeedsALiteralOrAnAnnotation() {
        expectExpansion(
            """
            @Model
            struct Event {
                var created = Date()
            }
            """,
            """
            struct Event {
                var created = Date()
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message:
                        "Property 'created' needs a type annotation: @Model infers a type only from a literal initial value (var created: Date = Date()).",
                    line: 3, column: 9)
            ])
    }

    @Test func structWithoutStoredPropertiesIsRefused() {
        expectExpansion(
            """
            @Model
            struct Empty {
                var name: String { "" }
            }
            """,
            """
            struct Empty {
                var name: String { "" }
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@Model struct 'Empty' has no stored properties; add at least one.", line: 2, column: 8)
            ])
    }

    @Test func markerOutsideAPropertyIsRefused() {
        expectExpansion(
            """
            @PrimaryKey func id() -> Int { 1 }
            """,
            """
            func id() -> Int { 1 }
            """,
            diagnostics: [
                DiagnosticSpec(
                    message: "@PrimaryKey applies to a stored property of a @Model struct.", line: 1, column: 1)
            ])
    }
}
