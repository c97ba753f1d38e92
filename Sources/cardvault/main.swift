import Foundation

exit(CardVaultCLI.run(CommandLine.arguments))
