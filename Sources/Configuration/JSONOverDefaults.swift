import Foundation

/// Reads a JSON settings file whose fields override a value's defaults: fields left out keep their
/// default, unknown fields are refused by name, so a typo never silently falls back.
public enum JSONOverDefaults {
    public static func load<Value: Codable>(
        _ path: String, over defaults: Value, field: String
    ) throws(ConfigurationError)
        -> Value
    {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(.invalidValue, field: field, message: "\(field): cannot read \(path)")
        }
        do {
            return try merge(data, over: defaults)
        } catch let error as ConfigurationError {
            throw ConfigurationError(error.code, field: field, message: "\(field) (\(path)): \(error.message)")
        } catch {
            throw ConfigurationError(.malformedFile, field: field, message: "\(field) (\(path)): \(error)")
        }
    }

    static func merge<Value: Codable>(_ data: Data, over defaults: Value) throws -> Value {
        guard let base = try JSONSerialization.jsonObject(with: JSONEncoder().encode(defaults)) as? [String: Any] else {
            throw ConfigurationError(.malformedFile, field: "", message: "the defaults are not an object")
        }
        guard let overrides = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError(.malformedFile, field: "", message: "must hold a JSON object")
        }
        var merged = base
        for (key, value) in overrides {
            guard base[key] != nil else {
                throw ConfigurationError(.unknownField, field: key, message: "unknown field \(key)")
            }
            merged[key] = value
        }
        do {
            return try JSONDecoder().decode(Value.self, from: JSONSerialization.data(withJSONObject: merged))
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context)
        {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw ConfigurationError(.invalidValue, field: path, message: "\(path): \(context.debugDescription)")
        }
    }
}
