import Foundation
import Testing

/// A property of a type that Strata cannot store, which `@Model` cannot
/// tell from an `@Embedded` struct by its name (an enum, a model used
/// without `Link`): the build fails with one error per property, naming
/// it and listing the supported types, and nothing else.
@Suite(.temporaryFolder) struct UnsupportedPropertyTypeTests {
    let folder = TemporaryFolder.current

    static let declarations = """
        import Strata

        enum Status { case active, retired }

        @Model struct Dog {
            @PrimaryKey var name: String
        }

        @Embedded struct Address {
            var city: String
        }

        """

    @Test func anEnumOrAModelIsRefusedByName() throws {
        let result = try SwiftCompiler.typecheck(
            Self.declarations + """
                @Model struct Person {
                    @PrimaryKey var id: Int
                    var status: Status
                    var pet: Dog?
                    var home: Address
                    var past: [Address] = []
                }

                enum V1 {
                    @Embedded struct Visit {
                        var vets: [Dog]
                    }
                }
                """, in: folder)
        #expect(result.status != 0)
        #expect(result.errors.count == 3, "\(result.errors)")
        let supported =
            "Supported types: Bool, Int, Int64, Double, String, Data, Date, UUID, Decimal, Link<Model>, an @Embedded struct"
        for (property, model, type) in [
            ("status", "Person", "Status"), ("pet", "Person", "Dog?"), ("vets", "Visit", "[Dog]"),
        ] {
            let error = result.errors.first { $0.contains("Property '\(property)'") }
            #expect(
                error?.hasPrefix(
                    "'storedType(\(property):)' is unavailable: Property '\(property)' of '\(model)' has type '\(type)', which Strata cannot store."
                ) == true, "\(result.errors)")
            #expect(error?.contains(supported) == true)
            #expect(error?.contains("Mark '\(property)' @Transient if it is not stored.") == true)
        }
    }

    /// The control: embedded structs, alone, optional and in arrays, short
    /// and qualified, compile without a word.
    @Test func embeddedStructsCompileCleanly() throws {
        let result = try SwiftCompiler.typecheck(
            Self.declarations + """
                enum V1 {
                    @Embedded struct Visit {
                        var city: String
                    }
                }

                @Model struct Person {
                    @PrimaryKey var id: Int
                    var home: Address
                    var work: Address?
                    var past: [Address] = []
                    var visit: V1.Visit?
                    @Transient var status: Status = .active
                    var pet: Link<Dog>?
                }
                """, in: folder)
        #expect(result.errors == [])
        #expect(result.status == 0)
    }
}
