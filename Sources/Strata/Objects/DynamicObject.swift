import Foundation

/// A read view of one stored object, valid inside the transaction that
/// produced it.
///
/// Reading a property decodes it from the record's bytes in place; a string
/// or data value is copied out only when you ask for it. Copy what you need
/// to keep (``values``, or single values) before the transaction ends:
/// using an object from a finished read transaction stops the program.
///
/// ```swift
/// try db.read { tx in
///     if let ada = try tx.object("Person", key: 1) {
///         print(ada["firstName"].string ?? "", ada.schemaVersion)
///     }
/// }
/// ```
public struct DynamicObject {
    let table: ObjectTable
    let key: UnsafeRawBufferPointer
    let record: RecordView
    /// Keeps copied bytes alive (objects of write transactions), or is the
    /// read transaction's lifetime (zero-copy objects).
    let owner: ObjectBytesOwner

    /// The name of the object's type.
    public var typeName: String { table.name }

    /// The schema version under which the object was last written: its
    /// effective schema version.
    public var schemaVersion: UInt64 {
        owner.checkAlive()
        return record.schemaVersion
    }

    /// The object's primary key, or its automatic id (as ``Value/int(_:)``)
    /// for a type without a primary key.
    public var primaryKey: Value {
        owner.checkAlive()
        // The key was validated when the object was read, so this cannot fail.
        return (try? KeyCodec.decodeKey(key, type: table.primaryKey?.type)) ?? .null
    }

    /// The value of a property.
    ///
    /// A property the record has no value for reads as its default. Naming a
    /// property the type does not have stops the program; use
    /// ``value(_:)`` when the name comes from input.
    public subscript(property: String) -> Value {
        guard let field = table.field(property) else {
            preconditionFailure("Object type '\(table.name)' has no property '\(property)'.")
        }
        return value(of: field)
    }

    /// The value of a property, or an error when the type has no such property.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownProperty``.
    public func value(_ property: String) throws -> Value {
        guard let field = table.field(property) else {
            throw table.unknownProperty(property, path: owner.path)
        }
        return value(of: field)
    }

    @inline(__always)
    func value(of field: ObjectTable.Field) -> Value {
        owner.checkAlive()
        guard let stored = record.value(forField: field.id, expectedAt: field.position) else { return field.valueWhenAbsent }
        return stored.fits(field.type, optional: field.isOptional) ? stored : field.valueWhenAbsent
    }

    /// Every current property's value, by name: a copy that outlives the
    /// transaction.
    public var values: [String: Value] {
        var result: [String: Value] = [:]
        result.reserveCapacity(table.fields.count)
        for field in table.fields { result[field.name] = value(of: field) }
        return result
    }
}

@available(*, unavailable, message: "A DynamicObject is valid only inside its transaction; copy its values instead.")
extension DynamicObject: Sendable {}

extension DynamicObject: CustomStringConvertible {
    /// The type name and every property, e.g. `Person(id: 1, name: "Ada")`.
    public var description: String {
        let fields = table.type.properties.map { "\($0.property.name): \(self[$0.property.name])" }
        return "\(table.name)(\(fields.joined(separator: ", ")))"
    }
}

/// What keeps a ``DynamicObject``'s bytes valid.
class ObjectBytesOwner {
    let path: String
    /// Set for zero-copy objects: false once their read transaction ended.
    /// A raw pointer rather than a stored `var`, so that the check on every
    /// property read costs one load and no exclusivity bookkeeping.
    let aliveFlag: UnsafeMutablePointer<Bool>?

    init(path: String, aliveFlag: UnsafeMutablePointer<Bool>?) {
        self.path = path
        self.aliveFlag = aliveFlag
    }

    @inline(__always)
    final func checkAlive() {
        if let aliveFlag, !aliveFlag.pointee {
            preconditionFailure("A DynamicObject of \(path) was used after its read transaction ended. Copy the values you need (object.values) inside the transaction.")
        }
    }
}

/// The lifetime of a read transaction: its objects point into the memory
/// map and must not be read after it ends.
final class TransactionLifetime: ObjectBytesOwner {
    init(path: String) {
        let flag = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        flag.initialize(to: true)
        super.init(path: path, aliveFlag: flag)
    }

    func end() { aliveFlag!.pointee = false }

    deinit { aliveFlag!.deallocate() }
}

/// A private copy of an object's key and record, for objects read inside a
/// write transaction, where a later write may move the bytes.
final class CopiedBytes: ObjectBytesOwner {
    let storage: UnsafeMutableRawBufferPointer
    let key: UnsafeRawBufferPointer
    let record: UnsafeRawBufferPointer

    init(key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer, path: String) {
        storage = .allocate(byteCount: max(1, key.count + record.count), alignment: 8)
        if key.count > 0 { storage.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        if record.count > 0 { (storage.baseAddress! + key.count).copyMemory(from: record.baseAddress!, byteCount: record.count) }
        self.key = UnsafeRawBufferPointer(start: storage.baseAddress, count: key.count)
        self.record = UnsafeRawBufferPointer(start: storage.baseAddress! + key.count, count: record.count)
        super.init(path: path, aliveFlag: nil)
    }

    deinit { storage.deallocate() }
}
