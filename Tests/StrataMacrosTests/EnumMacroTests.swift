import SwiftDiagnostics
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Enum properties: the macro takes an enum's name for a type of the
/// user's, passes an initial case as the schema default, and lets the
/// compiler check that an indexed one is a `PersistableEnum`.
@Suite struct EnumMacroTests {
    @Test func anIndexedEnumWithAnInitialCaseIsCheckedByTheCompiler() {
        expectExpansion(
            """
            @Model
            struct Task {
                @PrimaryKey var id: Int
                @Indexed var status: Status = .open
                var level: Level? = Level.low
                var past: [Status] = []
            }
            """,
            """
            struct Task {
                var id: Int
                var status: Status = .open
                var level: Level? = Level.low
                var past: [Status] = []
            }

            extension Task: Strata.Model {
                typealias Key = Int

                static let storedTypeName = "Task"

                static let schema = Strata.ModelSchema<Task>(
                    name: "Task",
                    properties: [
                        .init(\\Task.id, "id", primaryKey: true),
                        Strata._ModelMacroSupport.property(\\Task.status, "status", indexed: true, default: .open),
                        Strata._ModelMacroSupport.property(\\Task.level, "level", default: Level.low),
                        Strata._ModelMacroSupport.property(\\Task.past, "past"),
                    ]
                )

                func encode(to encoder: inout Strata.ModelEncoder) {
                    encoder.encode(self.id)
                    Strata._ModelMacroSupport.encode(self.status, to: &encoder)
                    Strata._ModelMacroSupport.encode(self.level, to: &encoder)
                    Strata._ModelMacroSupport.encode(self.past, to: &encoder)
                }

                init(from decoder: inout Strata.ModelDecoder) throws {
                    self.id = try decoder.decode(Int.self)
                    self.status = try Strata._ModelMacroSupport.decode(from: &decoder)
                    self.level = try Strata._ModelMacroSupport.decode(from: &decoder)
                    self.past = try Strata._ModelMacroSupport.decode(from: &decoder)
                }

                private static func _strataCheckStoredTypes() {
                    \(uncheckedTypeAttribute("status", of: "Task", type: "Status"))
                    func storedType<V>(status: KeyPath<Task, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(status: KeyPath<Task, V>) {
                    }
                    storedType(status: \\.status)
                    \(uncheckedTypeAttribute("level", of: "Task", type: "Level?"))
                    func storedType<V>(level: KeyPath<Task, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(level: KeyPath<Task, V>) {
                    }
                    storedType(level: \\.level)
                    \(uncheckedTypeAttribute("past", of: "Task", type: "[Status]"))
                    func storedType<V>(past: KeyPath<Task, V>) {
                    }
                    func storedType<V: Strata.PropertyValue>(past: KeyPath<Task, V>) {
                    }
                    storedType(past: \\.past)
                    @available(*, unavailable, message: "Property 'status' of 'Task' has type 'Status', which cannot be @Indexed: only Bool, Int, Int64, String, Date, UUID and Decimal properties, enums that conform to PersistableEnum, and their optionals can.")
                    func indexedType<V>(status: KeyPath<Task, V>) {
                    }
                    func indexedType<V: Strata.PersistableEnum>(status: KeyPath<Task, V>) {
                    }
                    func indexedType<V: Strata.PersistableEnum>(status: KeyPath<Task, V?>) {
                    }
                    indexedType(status: \\.status)
                }
            }
            """)
    }

    @Test func aListOfEnumsCannotBeIndexed() {
        expectExpansion(
            """
            @Model
            struct Task {
                @PrimaryKey var id: Int
                @Indexed var past: [Status] = []
            }
            """,
            """
            struct Task {
                var id: Int
                var past: [Status] = []
            }
            """,
            diagnostics: [
                DiagnosticSpec(
                    id: MessageID(domain: "StrataMacros", id: "notIndexable"),
                    message:
                        "Property 'past' of type '[Status]' cannot be @Indexed; only Bool, Int, Int64, String, Date, UUID and Decimal properties (and their optionals) can.",
                    line: 4, column: 5)
            ])
    }
}
