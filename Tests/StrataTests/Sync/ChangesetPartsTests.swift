import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// The parts a changeset is made of: its checksum and its field
/// descriptors.
@Suite struct ChangesetPartsTests {
    @Test func crc32cGivesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720 (iSCSI), B.4: 32 bytes of zeros, of ones, increasing.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0 ..< 32).map { UInt8($0) }) == 0x46DD_794E)
    }

    @Test func crc32cOfPiecesIsTheCrcOfTheWhole() {
        var generator = SplitMix64(seed: 3)
        let bytes = (0 ..< 1_000).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        let whole = CRC32C.checksum(bytes)
        for split in [0, 1, 7, 8, 9, 500, 999, 1_000] {
            let first = bytes[..<split].withUnsafeBytes { CRC32C.checksum($0) }
            let both = bytes[split...].withUnsafeBytes { CRC32C.checksum($0, continuing: first) }
            #expect(both == whole, "split at \(split)")
        }
        // The table-driven word loop agrees with the bit-at-a-time definition.
        var crc: UInt32 = ~0
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0 ..< 8 { crc = crc & 1 == 1 ? (crc >> 1) ^ CRC32C.polynomial : crc >> 1 }
        }
        #expect(~crc == whole)
    }

    /// Every property shape, with its descriptor.
    static let properties: [(Property, String)] = {
        var all: [(Property, String)] = []
        for type in PropertyType.primitives {
            all.append((Property("p", type), "\(type)"))
            all.append((Property("p", type, optional: true), "\(type)?"))
            all.append((Property.list("p", of: type), "list(\(type))"))
        }
        all += [
            (Property.link("p", to: "Person"), "link(Person)"),
            (Property.link("p", to: "Odd (name)?", onDelete: .cascade), "link(Odd (name)?)"),
            (Property.list("p", linksTo: "Person"), "list(link(Person))"),
            (Property.embedded("p", "Address"), "embedded(Address)?"),
            (Property.embedded("p", "Address", optional: false), "embedded(Address)"),
            (Property.embedded("p", "A)?"), "embedded(A)?)?"),
            (Property.embedded("p", "A)?", optional: false), "embedded(A)?)"),
            (Property.list("p", embedded: "Address"), "list(embedded(Address))"),
        ]
        return all
    }()

    @Test func everyPropertyHasADescriptorThatParsesBack() throws {
        for (property, text) in Self.properties {
            let descriptor = FieldDescriptor(property)
            #expect(descriptor.description == text)
            let parsed = try #require(FieldDescriptor(parsing: text), "\(text)")
            #expect(parsed == descriptor, "\(text)")
            let learned = parsed.property(named: property.name)
            #expect(learned.type == property.type && learned.isOptional == property.isOptional, "\(text)")
            #expect(learned.target == property.target && learned.elementType == property.elementType, "\(text)")
            #expect(FieldDescriptor(learned) == descriptor)
            #expect(FieldDescriptor.descriptor(of: property) == text)
            #expect(FieldDescriptor.property(named: "p", descriptor: text).map(FieldDescriptor.init) == descriptor)
        }
        #expect(Set(Self.properties.map(\.1)).count == Self.properties.count)
    }

    @Test(arguments: [
        "", "?", "integer", "int??", "Int", " int", "link", "link()", "link(Person)?", "list(int)?", "list()",
        "list(list(int))", "list(link(Person)?)", "list(int?)", "embedded()", "embedded(A", "link(A))x",
        "list(embedded(Address)?)",
    ])
    func nonCanonicalDescriptorsAreNotParsed(_ text: String) {
        #expect(FieldDescriptor(parsing: text) == nil)
    }

    @Test func descriptorsAdmitTheValuesOfTheirType() throws {
        let int = try #require(FieldDescriptor(parsing: "int"))
        #expect(int.admits(3) && !int.admits(nil) && !int.admits("3") && !int.admits(3.5))
        #expect(try #require(FieldDescriptor(parsing: "int?")).admits(nil))
        let link = try #require(FieldDescriptor(parsing: "link(P)"))
        #expect(link.admits(.link(1)) && link.admits(nil) && !link.admits(1) && !link.admits(.link(2.5)))
        let links = try #require(FieldDescriptor(parsing: "list(link(P))"))
        #expect(links.admits([.link("a"), .link(2)]) && !links.admits([.link("a"), nil]) && !links.admits(nil))
        let embedded = try #require(FieldDescriptor(parsing: "list(embedded(A))"))
        #expect(embedded.admits([["x": 1]]) && !embedded.admits([1]))
        #expect(!(try #require(FieldDescriptor(parsing: "decimal"))).admits(.decimal(.nan)))
    }
}
