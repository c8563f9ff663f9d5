import Foundation

/// The sanitizer the tests run under, if any (`make sanitize`).
enum Sanitizer {
    /// Whether AddressSanitizer's runtime is loaded.
    static let address = isLoaded("__asan_init")
    /// Whether ThreadSanitizer's runtime is loaded.
    static let thread = isLoaded("__tsan_init")

    private static func isLoaded(_ symbol: String) -> Bool {
        #if os(Linux)
        let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #else
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #endif
        return dlsym(everywhere, symbol) != nil
    }
}
