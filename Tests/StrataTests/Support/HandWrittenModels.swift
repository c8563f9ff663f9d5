import Foundation
import Strata

/// The Person of `Fixtures.person`, as a model written by hand (without the
/// macro): the conformance the docs show.
struct HandPerson: Model, Equatable {
    typealias Key = Int
    var id: Int
    var firstName: String
    var lastName: String
    var age: Int = 0
    var email: String?

    static let schema = ModelSchema<HandPerson>(
        name: "Person",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.firstName, "firstName"),
            .init(\.lastName, "lastName"),
            .init(\.age, "age", indexed: true, default: 0),
            .init(\.email, "email"),
        ])

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(firstName)
        encoder.encode(lastName)
        encoder.encode(age)
        encoder.encode(email)
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        firstName = try decoder.decode(String.self)
        lastName = try decoder.decode(String.self)
        age = try decoder.decode(Int.self)
        email = try decoder.decode(String?.self)
    }

    init(id: Int, firstName: String, lastName: String, age: Int = 0, email: String? = nil) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.age = age
        self.email = email
    }
}

/// A model without a primary key: its objects get automatic ids.
struct HandNote: Model, Equatable {
    typealias Key = Int64
    var text: String
    var priority: Int = 1

    static let schema = ModelSchema<HandNote>(
        name: "Note",
        properties: [
            .init(\.text, "text"),
            .init(\.priority, "priority", indexed: true, default: 1),
        ])

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(text)
        encoder.encode(priority)
    }

    init(from decoder: inout ModelDecoder) throws {
        text = try decoder.decode(String.self)
        priority = try decoder.decode(Int.self)
    }

    init(text: String, priority: Int = 1) {
        self.text = text
        self.priority = priority
    }
}
