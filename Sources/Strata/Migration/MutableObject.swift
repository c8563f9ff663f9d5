/// The writable side of an object during a migration: its values under the
/// new schema.
///
/// `enumerateObjects(ofType:_:)` hands one to the closure for each object.
/// It starts with what the stored record reads as under the new schema —
/// carried-over values, defaults for new properties — and whatever the
/// closure sets is written back when the closure returns:
///
/// ```swift
/// try migration.enumerateObjects(ofType: "Person") { old, new in
///     new?["fullName"] = .string("\(old!["firstName"].string!) \(old!["lastName"].string!)")
/// }
/// ```
///
/// An object the closure does not change is not rewritten, so it keeps its
/// effective schema version. A `MutableObject` is valid only during the
/// call of the closure it was given to: Strata reuses it for the next
/// object, and using it afterwards stops the program.
public final class MutableObject {
    let table: ObjectTable

    /// What changes from one object to the next. Kept behind a pointer: a
    /// class's stored `var`s are checked for exclusive access at run time on
    /// every use, which a migration would pay several times per object.
    private struct State {
        /// The record the values start from: the object's stored record,
        /// read through the new schema. Nil for a created object.
        var base: RecordView?
        var keyCount = 0
        var isDirty = false
        /// One bit per field position set (all bits once past 63).
        var changedPositions: UInt64 = 0
        var isDeleted = false
        /// Whether the closure it was handed to is running.
        var isActive = false
        /// The first invalid assignment, reported when the closure
        /// returns: a subscript setter cannot throw.
        var pendingError: StrataError?
        /// Keeps the bytes `base` points at alive, when they are a copy.
        var storage: CopiedBytes?
        /// The effective version to stamp, when not the migration's own
        /// (a typed step composed from an older version).
        var stampedVersion: UInt64?
        /// Whether a typed step wrote the object's whole record, header
        /// and key included, into the rewriter's encoder: nothing is left
        /// to encode.
        var isEncoded = false
    }

    private let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
    /// Values set by the closure, by field position.
    let overrides: UnsafeMutableBufferPointer<Value?>
    private let keyStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: KeyCodec.maxKeySize, alignment: 8)

    /// The object's key in its records database: a private copy, which a
    /// put cannot move.
    var key: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: keyStorage.baseAddress, count: state.pointee.keyCount)
    }
    var base: RecordView? { state.pointee.base }
    var isDirty: Bool { state.pointee.isDirty }
    var changedPositions: UInt64 { state.pointee.changedPositions }
    var isDeleted: Bool { state.pointee.isDeleted }
    var pendingError: StrataError? { state.pointee.pendingError }
    var isActive: Bool {
        get { state.pointee.isActive }
        set { state.pointee.isActive = newValue }
    }
    var stampedVersion: UInt64? {
        get { state.pointee.stampedVersion }
        set { state.pointee.stampedVersion = newValue }
    }
    var isEncoded: Bool { state.pointee.isEncoded }

    init(table: ObjectTable) {
        self.table = table
        state.initialize(to: State())
        overrides = .allocate(capacity: table.fields.count)
        overrides.initialize(repeating: nil)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
        overrides.deinitialize()
        overrides.deallocate()
        keyStorage.deallocate()
    }

    /// Points the object at the next record; `storage` owns the bytes when
    /// they are a private copy.
    func reset(key: UnsafeRawBufferPointer, base: RecordView?, storage: CopiedBytes?) {
        precondition(key.count <= keyStorage.count, "A key longer than LMDB allows")
        keyStorage.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count)
        // Field by field: assigning a whole new State would copy and
        // destroy its optional references on every object.
        if state.pointee.isDirty {
            for position in overrides.indices { overrides[position] = nil }
            state.pointee.isDirty = false
            state.pointee.changedPositions = 0
        }
        state.pointee.base = base
        state.pointee.keyCount = key.count
        state.pointee.isDeleted = false
        state.pointee.stampedVersion = nil
        state.pointee.isEncoded = false
        if state.pointee.pendingError != nil { state.pointee.pendingError = nil }
        if storage != nil || state.pointee.storage != nil { state.pointee.storage = storage }
    }

    private func checkActive() {
        precondition(
            isActive,
            "A MutableObject was used outside the migration closure call it was given to. Read and set its values inside that call."
        )
    }

    /// The name of the object's type in the new schema.
    public var typeName: String { table.name }

    /// Whether ``Migration/delete(_:)`` was called on the object.
    public var isDeletedInMigration: Bool {
        checkActive()
        return isDeleted
    }

    /// The value of a property under the new schema.
    ///
    /// Reading a property the new schema does not have stops the program
    /// (use ``value(_:)`` when the name comes from input). Setting one, or
    /// setting a value of the wrong type, fails the migration with a
    /// ``StrataError`` when the closure returns; use ``setValue(_:for:)`` to
    /// get the error at once.
    public subscript(property: String) -> Value {
        get {
            checkActive()
            guard let position = table.position(of: property) else {
                preconditionFailure("Object type '\(table.name)' has no property '\(property)' in the new schema.")
            }
            return value(at: position)
        }
        set {
            checkActive()
            if let position = table.position(of: property) {
                let info = table.readInfo[position]
                let coerced = newValue.coerced(to: info.type)
                if coerced.fits(info.type, optional: info.isOptional) {
                    overrides[position] = coerced
                    state.pointee.isDirty = true
                    state.pointee.changedPositions |= 1 << UInt64(min(position, 63))
                    return
                }
            }
            do {
                try setValue(newValue, for: property)
            } catch let error as StrataError {
                if state.pointee.pendingError == nil { state.pointee.pendingError = error }
            } catch {
                preconditionFailure("setValue(_:for:) throws only StrataError")
            }
        }
    }

    /// The value of a property, or an error when the new schema has no such
    /// property.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownProperty``.
    public func value(_ property: String) throws -> Value {
        checkActive()
        guard let position = table.position(of: property) else { throw table.unknownProperty(property) }
        return value(at: position)
    }

    /// Sets a property, checking the name and the value's type at once.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownProperty``
    ///   or ``StrataError/Code/invalidValue``.
    public func setValue(_ value: Value, for property: String) throws {
        checkActive()
        let field = try table.field(named: property)
        let coerced = value.coerced(to: field.type)
        guard coerced.fits(field.type, optional: field.isOptional) else {
            let expected = field.isOptional ? "\(field.type)?" : "\(field.type)"
            throw StrataError.invalidValue(
                "The migration set property '\(table.name).\(property)' (\(expected)) to \(value), which it cannot hold (in \(table.path)).",
                typeName: table.name, property: property, nothingWritten: true, path: table.path)
        }
        overrides[field.position] = coerced
        state.pointee.isDirty = true
        state.pointee.changedPositions |= 1 << UInt64(min(field.position, 63))
    }

    /// Every property's value under the new schema, by name.
    public var values: [String: Value] {
        checkActive()
        var result: [String: Value] = [:]
        for field in table.fields { result[field.name] = value(at: field.position) }
        return result
    }

    @inline(__always)
    func value(at position: Int) -> Value {
        if let value = overrides[position] { return value }
        guard let base else { return table.fields[position].valueWhenAbsent }
        return table.value(at: position, in: base)
    }

    /// Sets the field at `position` to a typed model's value. A typed step
    /// sets every field; an indexed one counts as changed only when its
    /// value differs from the stored one, so that an index whose values no
    /// step changed is not rebuilt. A value of another type (a model
    /// written by hand may hand an `Int` over for a `Double` property) is
    /// converted as ``setValue(_:for:)`` converts it, or refused.
    @inline(__always)
    func assign(_ value: Value, at position: Int) {
        let info = table.readInfo[position]
        guard value.fits(info.type, optional: info.isOptional) else { return assignConverting(value, at: position) }
        overrides[position] = value
        state.pointee.isDirty = true
        let bit: UInt64 = 1 << UInt64(min(position, 63))
        if table.indexedPositions & bit != 0, let base,
            table.value(at: position, in: base).isStored(identicallyTo: value)
        {
            return
        }
        state.pointee.changedPositions |= bit
    }

    /// Takes `record`, which a typed step encoded whole into the
    /// rewriter's encoder, as the object's new record: every field counts
    /// as set, and as changed unless it is indexed and its bytes are the
    /// stored ones (the rule of ``assign(_:at:)``, which decides which
    /// indexes to rebuild).
    func adoptEncodedRecord(_ record: RecordView) {
        state.pointee.isDirty = true
        state.pointee.isEncoded = true
        state.pointee.changedPositions = table.changedPositions(of: record, from: base)
    }

    @inline(never)
    private func assignConverting(_ value: Value, at position: Int) {
        let field = table.fields[position]
        let coerced = value.coerced(to: field.type)
        guard coerced.fits(field.type, optional: field.isOptional) else {
            let expected = field.isOptional ? "\(field.type)?" : "\(field.type)"
            if state.pointee.pendingError == nil {
                state.pointee.pendingError = StrataError.invalidValue(
                    "A typed step set property '\(table.name).\(field.name)' (\(expected)) to \(value), which it cannot hold (in \(table.path)).",
                    typeName: table.name, property: field.name,
                    remedy:
                        "Have the step's new model hand over a value of the property's type (in encode(to:), or through the @Model macro).",
                    nothingWritten: true, path: table.path)
            }
            return
        }
        assign(coerced, at: position)
    }

    func markDeleted() {
        checkActive()
        state.pointee.isDeleted = true
    }
}

@available(*, unavailable, message: "A MutableObject is valid only inside the migration closure call it was given to.")
extension MutableObject: Sendable {}

extension MutableObject: CustomStringConvertible {
    /// The type name and every property under the new schema.
    public var description: String {
        checkActive()
        let fields = table.fields.map { "\($0.name): \(value(at: $0.position))" }
        return "\(table.name)(\(fields.joined(separator: ", ")))"
    }
}
