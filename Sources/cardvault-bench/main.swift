import Foundation

// The tokenization benchmark suite; filled by the benchmark issue.
print("cardvault-bench: no suites yet")
