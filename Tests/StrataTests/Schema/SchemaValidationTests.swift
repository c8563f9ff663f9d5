import Foundation
import Testing

@testable import Strata

/// A schema that breaks exactly one rule, and a fragment of the sentence
/// that names the problem.
struct InvalidSchemaCase: Sendable, CustomTestStringConvertible {
    let rule: String
    let schema: Schema
    let fragment: String

    init(_ rule: String, _ fragment: String, _ objectSchemas: [ObjectSchema]) {
        self.rule = rule
        self.fragment = fragment
        self.schema = Schema(objectSchemas)
    }

    var testDescription: String { rule }

    static func keyed(_ type: PropertyType, optional: Bool = false) -> ObjectSchema {
        ObjectSchema("T", primaryKey: "id") {
            Property("id", type, optional: optional)
            Property("name", .string)
        }
    }

    static let longASCII = String(repeating: "a", count: 256)
    /// 128 characters but 256 bytes: the limit counts UTF-8 bytes.
    static let longNonASCII = String(repeating: "é", count: 128)

    static let all: [InvalidSchemaCase] =
        [
            .init("empty type name", "An object type has an empty name.", [ObjectSchema("") { Property("x", .int) }]),
            .init(
                "empty property name", "A property of 'T' has an empty name.",
                [ObjectSchema("T") { Property("", .int) }]),
            .init(
                "duplicate type", "Object type 'T' is declared more than once.",
                [
                    ObjectSchema("T") { Property("x", .int) },
                    ObjectSchema("T") { Property("y", .string) },
                ]),
            .init(
                "duplicate property", "Property 'T.x' is declared more than once.",
                [
                    ObjectSchema("T") {
                        Property("x", .int)
                        Property("x", .string)
                    }
                ]),
            .init(
                "type name starting with __", "Object type '__T' starts with '__', which is reserved for Strata.",
                [ObjectSchema("__T") { Property("x", .int) }]),
            .init(
                "property name starting with __", "Property 'T.__x' starts with '__', which is reserved for Strata.",
                [ObjectSchema("T") { Property("__x", .int) }]),
            .init(
                "type name over 255 bytes", "Object type '\(longASCII)' has a name longer than 255 bytes.",
                [ObjectSchema(longASCII) { Property("x", .int) }]),
            .init(
                "type name over 255 UTF-8 bytes in 128 characters",
                "Object type '\(longNonASCII)' has a name longer than 255 bytes.",
                [ObjectSchema(longNonASCII) { Property("x", .int) }]),
            .init(
                "property name over 255 bytes", "Property 'T.\(longASCII)' has a name longer than 255 bytes.",
                [ObjectSchema("T") { Property(longASCII, .int) }]),
            .init("type without properties", "Object type 'T' has no properties.", [ObjectSchema("T", properties: [])]),
            .init(
                "primary key naming a missing property", "Primary key 'id' of 'T' is not one of its properties.",
                [ObjectSchema("T", primaryKey: "id") { Property("name", .string) }]),
            .init(
                "double primary key",
                "Primary key 'T.id' is of type double; a primary key must be int, string or uuid.", [keyed(.double)]),
            .init(
                "bool primary key", "Primary key 'T.id' is of type bool; a primary key must be int, string or uuid.",
                [keyed(.bool)]),
            .init(
                "data primary key", "Primary key 'T.id' is of type data; a primary key must be int, string or uuid.",
                [keyed(.data)]),
            .init(
                "date primary key", "Primary key 'T.id' is of type date; a primary key must be int, string or uuid.",
                [keyed(.date)]),
            .init(
                "optional primary key", "Primary key 'T.id' is optional; a primary key must be required.",
                [keyed(.int, optional: true)]),
            .init(
                "string default on int", "Property 'T.n' has a default value \"zero\" of type string; it must be int.",
                [ObjectSchema("T") { Property("n", .int, default: "zero") }]),
            .init(
                "double default on int", "Property 'T.n' has a default value 1.5 of type double; it must be int.",
                [ObjectSchema("T") { Property("n", .int, default: 1.5) }]),
            .init(
                "wrong default on optional", "Property 'T.n' has a default value true of type bool; it must be int?.",
                [ObjectSchema("T") { Property("n", .int, optional: true, default: true) }]),
            .init(
                "null default on required", "Property 'T.n' has a default value null of type null; it must be int.",
                [ObjectSchema("T") { Property("n", .int, default: .null) }]),
            .init(
                "index on double",
                "Property 'T.score' of type double cannot be indexed; only bool, int, string, date, uuid and decimal properties can.",
                [ObjectSchema("T") { Property("score", .double, indexed: true) }]),
            .init(
                "index on data",
                "Property 'T.blob' of type data cannot be indexed; only bool, int, string, date, uuid and decimal properties can.",
                [ObjectSchema("T") { Property("blob", .data, indexed: true) }]),
            .init(
                "property name over 255 UTF-8 bytes in 128 characters",
                "Property 'T.\(longNonASCII)' has a name longer than 255 bytes.",
                [ObjectSchema("T") { Property(longNonASCII, .int) }]),
        ] + wrongDefaults

    /// Every property type with a default of every other type (an integer
    /// default of a double or decimal property, and a double default of a
    /// decimal property, excepted: they are converted), and with a null
    /// default while required.
    static let wrongDefaults: [InvalidSchemaCase] = PropertyType.primitives.flatMap { type in
        let wrong =
            Fixtures.valueOfEachType.filter {
                $0.propertyType != type && !(type == .double && $0.propertyType == .int)
                    && !(type == .decimal && ($0.propertyType == .int || $0.propertyType == .double))
            }
            + [.null]
        return wrong.map { value in
            let found = value.propertyType.map { "\($0)" } ?? "null"
            return InvalidSchemaCase(
                "\(found) default on \(type)",
                "Property 'T.p' has a default value \(value) of type \(found); it must be \(type).",
                [ObjectSchema("T") { Property("p", type, default: value) }])
        }
    }
}

@Suite(.temporaryFolder) struct SchemaValidationTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// The problem lines of an invalid-schema message (each starts with "- ").
    /// The problems an error lists, each also a "- " line of its message.
    static func problemLines(_ error: StrataError?, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [String]
    {
        let error = try #require(error, sourceLocation: sourceLocation)
        for item in error.items {
            #expect(error.message.contains("\n- \(item)"), "\(error.message)", sourceLocation: sourceLocation)
        }
        return error.items
    }

    @Test(arguments: InvalidSchemaCase.all)
    func validateReportsTheBrokenRule(_ invalid: InvalidSchemaCase) throws {
        let error = expectStrataError(.invalidSchema) { try invalid.schema.validate() }
        let message = try #require(error?.message)
        #expect(message.hasPrefix("The schema is invalid:\n"))
        #expect(try Self.problemLines(error) == [invalid.fragment], "\(message)")
    }

    @Test(arguments: InvalidSchemaCase.all, Fixtures.modes)
    func openingWithInvalidSchemaThrowsAndCreatesNoFile(_ invalid: InvalidSchemaCase, _ mode: Database.Mode) throws {
        let path = folder.path()
        let error = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: Fixtures.configuration(path, schema: invalid.schema, mode: mode))
        }
        let message = try #require(error?.message)
        #expect(message.hasPrefix("The schema for \(path) is invalid:\n"), "\(message)")
        #expect(message.contains(invalid.fragment), "\(message)")
        #expect(error?.path == path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    @Test func everyProblemIsListedOnALineOfItsOwn() throws {
        let schema = Schema([
            ObjectSchema("__Internal") { Property("x", .int) },
            ObjectSchema("Empty", properties: []),
            ObjectSchema("T", primaryKey: "id") {
                Property("id", .double, optional: true)
                Property("score", .double, indexed: true)
                Property("n", .int, default: "x")
                Property("n", .int)
            },
            ObjectSchema("T") { Property("y", .int) },
        ])
        let expected = [
            "Object type '__Internal' starts with '__', which is reserved for Strata.",
            "Object type 'Empty' has no properties.",
            "Property 'T.score' of type double cannot be indexed; only bool, int, string, date, uuid and decimal properties can.",
            "Property 'T.n' has a default value \"x\" of type string; it must be int.",
            "Property 'T.n' is declared more than once.",
            "Primary key 'T.id' is of type double; a primary key must be int, string or uuid.",
            "Primary key 'T.id' is optional; a primary key must be required.",
            "Object type 'T' is declared more than once.",
        ]
        let error = expectStrataError(.invalidSchema) { try schema.validate() }
        let lines = try Self.problemLines(error)
        #expect(lines.count == expected.count, "\(lines)")
        #expect(Set(lines) == Set(expected), "\(lines)")

        let openError = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema))
        }
        #expect(Set(try Self.problemLines(openError)) == Set(expected))
    }

    /// Every property type, required and optional, indexed where allowed,
    /// with defaults, and every primary key type (one of them marked indexed).
    static let everyVariant: Schema = {
        var properties: [Property] = [Property("id", .int, indexed: true)]
        for type in PropertyType.primitives {
            properties.append(Property("\(type)", type))
            properties.append(Property("\(type)Optional", type, optional: true))
            properties.append(Property("\(type)Default", type, default: type.emptyValue))
            properties.append(Property("\(type)OptionalNullDefault", type, optional: true, default: .null))
            if type.canBeIndexed {
                properties.append(Property("\(type)Indexed", type, indexed: true))
                properties.append(Property("\(type)OptionalIndexed", type, optional: true, indexed: true))
            }
        }
        return Schema([
            ObjectSchema("Everything", primaryKey: "id", properties: properties),
            ObjectSchema("ByString", primaryKey: "key") { Property("key", .string) },
            ObjectSchema("ByUUID", primaryKey: "key") { Property("key", .uuid) },
            ObjectSchema("Automatic") { Property("x", .int, indexed: true) },
            ObjectSchema(String(repeating: "t", count: 255)) { Property(String(repeating: "p", count: 255), .int) },
            ObjectSchema("_single_underscore") { Property("_x", .int) },
        ])
    }()

    @Test(arguments: Fixtures.modes) func schemaWithEveryPropertyVariantIsValidAndOpens(_ mode: Database.Mode) throws {
        try Self.everyVariant.validate()
        let config = Fixtures.configuration(folder.path(), schema: Self.everyVariant, mode: mode)
        do {
            let db = try Database(configuration: config)
            let everything = try #require(Self.everyVariant["Everything"])
            var required: [String: Value] = [:]
            for property in everything.properties where !property.isOptional && property.defaultValue == nil {
                required[property.name] = property.type.emptyValue
            }
            required["id"] = 1
            try db.write { tx in
                _ = try tx.insert("Everything", required)
                _ = try tx.insert("Automatic", ["x": 3])
            }
        }
        // Reopening compares the stored schema with the configured one, so it
        // proves the stored form of the schema matches what was given.
        let db = try Database(configuration: config)
        #expect(try db.read { try $0.objects("Everything").count } == 1)
        #expect(db.schema.typeNames == Self.everyVariant.typeNames)
    }

    @Test(arguments: Fixtures.modes) func intDefaultOnDoublePropertyIsValid(_ mode: Database.Mode) throws {
        let schema = Schema([
            ObjectSchema("Measure") {
                Property("reading", .double, default: 2)
                Property("limit", .double, optional: true, default: .int(-7))
            }
        ])
        try schema.validate()
        let config = Fixtures.configuration(folder.path(), schema: schema, mode: mode)
        do {
            let db = try Database(configuration: config)
            try db.write { tx in _ = try tx.insert("Measure", [:]) }
        }
        let db = try Database(configuration: config)
        let values = try db.read { tx in try #require(try tx.objects("Measure").first()).values }
        #expect(values == ["reading": .double(2), "limit": .double(-7)])
    }
}
