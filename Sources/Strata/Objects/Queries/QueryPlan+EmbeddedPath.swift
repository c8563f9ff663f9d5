extension QueryPlan {
    /// A property inside the embedded objects of a table field
    /// (`$0.step.label`), which a query's conditions and order read in the
    /// record, as they read the table's own fields, without decoding the
    /// object.
    struct EmbeddedPath: Equatable {
        /// The table field that holds the outermost embedded object.
        let field: ObjectTable.Field
        /// The fields of the embedded layouts on the way, outermost first;
        /// the last is the property read.
        let inner: [ObjectTable.Field]

        static func == (a: Self, b: Self) -> Bool {
            a.field === b.field && a.inner.count == b.inner.count && zip(a.inner, b.inner).allSatisfy { $0 === $1 }
        }

        /// What the property reads as in `record`: its stored value, its
        /// default when the embedded object lacks it, and null when an
        /// optional embedded object on the way is nil.
        func value(in record: RecordView) -> Value {
            guard let base = record.bytes.baseAddress,
                var p = record.fieldOffset(forField: field.id, expectedAt: field.position)
            else { return decodedValue(in: record) }
            var end = record.bytes.count
            for inner in self.inner {
                // At `p`: the tag of the embedded object that holds `inner`.
                let tag = base.load(fromByteOffset: p, as: UInt8.self)
                if tag == RecordCodec.Tag.null.rawValue { return .null }
                guard tag == RecordCodec.Tag.object.rawValue, var contents = CompositeBytes(base, at: p, end: end)
                else { return decodedValue(in: record) }
                var found: Int?
                while let stored = contents.nextField() {
                    if stored.id == inner.id {
                        found = stored.value
                        break
                    }
                }
                // An object stored before the property was added: its default.
                guard let found else { return decodedValue(in: record) }
                (p, end) = (found, contents.end)
            }
            let last = inner[inner.count - 1]
            if last.type.isComposite { return CompositeCodec.read(last, base, &p, end) ?? decodedValue(in: record) }
            guard let value = RecordView.read(base, &p, end), value.fits(last.type, optional: last.isOptional) else {
                return decodedValue(in: record)
            }
            return value
        }

        /// The same value, read through the decoded embedded object: for
        /// what the walk through the bytes leaves to the codec (a field
        /// the record or an object lacks, a value that does not fit).
        private func decodedValue(in record: RecordView) -> Value {
            var value = field.valueWhenAbsent
            if let base = record.bytes.baseAddress,
                var p = record.fieldOffset(forField: field.id, expectedAt: field.position),
                let stored = CompositeCodec.read(field, base, &p, record.bytes.count)
            {
                value = stored
            }
            for inner in self.inner {
                guard case .object(let properties) = value else { return .null }
                value = properties[inner.name] ?? inner.valueWhenAbsent
            }
            return value
        }
    }
}
