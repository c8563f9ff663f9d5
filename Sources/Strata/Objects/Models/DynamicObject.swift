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
    /// Not retained: the table lives as long as its database, and every
    /// access checks ``lifetime`` first, so an object that outlived its
    /// transaction stops the program before touching it. Skipping the
    /// retain and release saves two atomic operations per object scanned.
    unowned(unsafe) let table: ObjectTable
    let key: UnsafeRawBufferPointer
    let record: RecordView
    let lifetime: TransactionLifetime.Token
    /// The private copy of the bytes, for objects read in a write
    /// transaction, where a later write may move the bytes in the map.
    let copy: CopiedBytes?

    /// The name of the object's type.
    public var typeName: String {
        lifetime.check()
        return table.name
    }

    /// The schema version under which the object was last written: its
    /// effective schema version.
    public var schemaVersion: UInt64 {
        lifetime.check()
        return record.effectiveSchemaVersion
    }

    /// The object's primary key, or its automatic id (as ``Value/int(_:)``)
    /// for a type without a primary key.
    public var primaryKey: Value {
        lifetime.check()
        // The key was validated when the object was read, so this cannot fail.
        return (try? KeyCodec.decodeKey(key, type: table.primaryKey?.type)) ?? .null
    }

    /// The value of a property.
    ///
    /// A property the record has no value for reads as its default. Naming a
    /// property the type does not have stops the program; use
    /// ``value(_:)`` when the name comes from input.
    ///
    /// An object of a scan checks the bytes of the fields it reads, not its
    /// whole record first. A read that finds its field damaged cannot
    /// throw: it reads the default, and the scan throws
    /// ``StrataError/Code/corruptFile`` once it has passed the object (or
    /// the transaction, when its closure returns).
    public subscript(property: String) -> Value {
        lifetime.check()
        guard let position = table.position(of: property) else {
            preconditionFailure("Object type '\(table.name)' has no property '\(property)'.")
        }
        return value(at: position)
    }

    /// The value of a property, or an error when the type has no such property.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownProperty``.
    public func value(_ property: String) throws -> Value {
        lifetime.check()
        guard let position = table.position(of: property) else {
            throw table.unknownProperty(property)
        }
        return value(at: position)
    }

    @inline(__always)
    func value(of field: ObjectTable.Field) -> Value {
        value(at: field.position)
    }

    /// The value of the field at `position` in the table's fields.
    ///
    /// An object of a scan holds a record checked only as far as each read
    /// goes (``RecordView/init(checkingHeader:)``). A read that meets
    /// damage cannot throw here: it reads as the property's default and
    /// hands the error to the transaction, which throws it when the scan
    /// has passed the object, or when the transaction's closure returns.
    @inline(__always)
    func value(at position: Int) -> Value {
        lifetime.check()
        guard !record.isValidated else { return table.value(at: position, in: record) }
        if let value = table.touchedValue(at: position, in: record) { return value }
        return valueOfWholeRecord(at: position)
    }

    /// The value of the field at `position`, read after the whole record is
    /// validated: a field the record lacks reads as its default, and a
    /// damaged record's as the default too, with the damage reported.
    @inline(never)
    private func valueOfWholeRecord(at position: Int) -> Value {
        do throws(DecodingFailure) {
            return table.value(at: position, in: try record.validated())
        } catch {
            lifetime.reportDamage(table.corruptRecord(error, key: key))
            return table.fields[position].valueWhenAbsent
        }
    }

    /// Every current property's value, by name: a copy that outlives the
    /// transaction. A damaged record reads as every property's default, and
    /// the scan or the transaction throws ``StrataError/Code/corruptFile``,
    /// as for a property read through the subscript.
    public var values: [String: Value] {
        lifetime.check()
        do throws(DecodingFailure) {
            return table.values(in: try record.validated())
        } catch {
            lifetime.reportDamage(table.corruptRecord(error, key: key))
            return Dictionary(uniqueKeysWithValues: table.fields.map { ($0.name, $0.valueWhenAbsent) })
        }
    }
}

@available(*, unavailable, message: "A DynamicObject is valid only inside its transaction; copy its values instead.")
extension DynamicObject: Sendable {}

extension DynamicObject: CustomStringConvertible {
    /// The type name and every property, e.g. `Person(id: 1, name: "Ada")`.
    public var description: String {
        lifetime.check()
        let fields = table.type.properties.map { "\($0.property.name): \(self[$0.property.name])" }
        return "\(table.name)(\(fields.joined(separator: ", ")))"
    }
}

/// Tells whether a transaction is still running, for the objects it made,
/// and carries the damage their reads met back to the transaction.
///
/// Each transaction takes a slot, a word that never moves and is never
/// freed, and remembers the slot's value; ending the transaction increments
/// the word and returns the slot for reuse. An object compares the word with
/// the value it was made with: one load and one comparison per access, no
/// reference count, and no false positive after the slot is reused.
final class TransactionLifetime {
    /// A transaction's slot: its generation, and the first damage that a
    /// read of one of its objects met (a read that cannot throw).
    struct Slot {
        var generation: UInt64
        var isDamaged: Bool
        var damage: StrataError?
    }

    struct Token {
        let slot: UnsafeMutablePointer<Slot>
        let generation: UInt64

        @inline(__always)
        func check() {
            if slot.pointee.generation != generation {
                preconditionFailure(
                    "A DynamicObject was used after its transaction ended. Copy the values you need (object.values) inside the transaction."
                )
            }
        }

        /// Keeps `error` for the transaction to throw (the first one only).
        func reportDamage(_ error: StrataError) {
            guard !slot.pointee.isDamaged else { return }
            slot.pointee.isDamaged = true
            slot.pointee.damage = error
        }
    }

    let token: Token
    private let slot: UnsafeMutablePointer<Slot>
    private var ended = false

    init() {
        slot = TransactionLifetime.acquireSlot()
        token = Token(slot: slot, generation: slot.pointee.generation)
    }

    /// Throws the damage a read of one of the transaction's objects met
    /// since the last call, if any.
    @inline(__always)
    func throwDamage() throws {
        if slot.pointee.isDamaged { try throwReportedDamage() }
    }

    @inline(never)
    private func throwReportedDamage() throws {
        let damage = slot.pointee.damage
        slot.pointee.isDamaged = false
        slot.pointee.damage = nil
        if let damage { throw damage }
    }

    /// Invalidates every object of the transaction.
    func end() {
        guard !ended else { return }
        ended = true
        slot.pointee.generation &+= 1
        slot.pointee.isDamaged = false
        slot.pointee.damage = nil
        TransactionLifetime.releaseSlot(slot)
    }

    deinit { end() }

    private static let freeSlotsLock = NSLock()
    // nonisolated(unsafe): only touched while holding freeSlotsLock.
    nonisolated(unsafe) private static var freeSlots: [UnsafeMutablePointer<Slot>] = []

    private static func acquireSlot() -> UnsafeMutablePointer<Slot> {
        freeSlotsLock.withLock {
            if let slot = freeSlots.popLast() { return slot }
            let slot = UnsafeMutablePointer<Slot>.allocate(capacity: 1)
            slot.initialize(to: Slot(generation: 0, isDamaged: false, damage: nil))
            return slot
        }
    }

    private static func releaseSlot(_ slot: UnsafeMutablePointer<Slot>) {
        freeSlotsLock.withLock { freeSlots.append(slot) }
    }
}

/// A private copy of an object's key and record, for objects read inside a
/// write transaction, where a later write may move the bytes.
final class CopiedBytes {
    let storage: UnsafeMutableRawBufferPointer
    let key: UnsafeRawBufferPointer
    let record: UnsafeRawBufferPointer

    init(key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) {
        storage = .allocate(byteCount: max(1, key.count + record.count), alignment: 8)
        if key.count > 0 { storage.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        if record.count > 0 {
            (storage.baseAddress! + key.count).copyMemory(from: record.baseAddress!, byteCount: record.count)
        }
        self.key = UnsafeRawBufferPointer(start: storage.baseAddress, count: key.count)
        self.record = UnsafeRawBufferPointer(start: storage.baseAddress! + key.count, count: record.count)
    }

    deinit { storage.deallocate() }
}
