import CardKit

/// Small card-brand marks drawn for CardVault (simple shapes and lettering, not the networks' artwork), shown
/// inside the card number field. Inline SVG: no request, no inline style (the pages' policy forbids it).
enum CheckoutBrandLogos {
    /// The mark of `brand` as an `<svg>` element labelled with its name.
    static func svg(_ brand: CardBrand) -> String {
        let label = HTMLTextEscaping.escape(brand.displayName)
        return
            "<svg class=\"logo\" viewBox=\"0 0 40 26\" width=\"32\" height=\"21\" role=\"img\" aria-label=\"\(label)\" "
            + "focusable=\"false\" xmlns=\"http://www.w3.org/2000/svg\">" + drawing(brand) + "</svg>"
    }

    private static func text(
        _ letters: String, x: Int = 20, y: Int = 17, size: Int = 10, fill: String, italic: Bool = false
    )
        -> String
    {
        "<text x=\"\(x)\" y=\"\(y)\" text-anchor=\"middle\" font-family=\"Arial, Helvetica, sans-serif\" "
            + "font-size=\"\(size)\" font-weight=\"700\"" + (italic ? " font-style=\"italic\"" : "")
            + " fill=\"\(fill)\">\(letters)</text>"
    }

    private static func card(_ fill: String, stroke: String = "#8a8a96") -> String {
        "<rect x=\"0.5\" y=\"0.5\" width=\"39\" height=\"25\" rx=\"4\" fill=\"\(fill)\" stroke=\"\(stroke)\"/>"
    }

    private static func drawing(_ brand: CardBrand) -> String {
        switch brand {
        case .visa:
            return card("#1a1f71", stroke: "#1a1f71") + text("VISA", y: 17, size: 11, fill: "#ffffff", italic: true)
        case .mastercard:
            return card("#ffffff") + "<circle cx=\"16\" cy=\"13\" r=\"7.5\" fill=\"#e2211c\"/>"
                + "<circle cx=\"24\" cy=\"13\" r=\"7.5\" fill=\"#f59c1a\" fill-opacity=\"0.9\"/>"
        case .maestro:
            return card("#ffffff") + "<circle cx=\"16\" cy=\"13\" r=\"7.5\" fill=\"#1c7ed6\"/>"
                + "<circle cx=\"24\" cy=\"13\" r=\"7.5\" fill=\"#e2211c\" fill-opacity=\"0.85\"/>"
        case .amex:
            return card("#1f6fb8", stroke: "#1f6fb8") + text("AMEX", y: 17, size: 10, fill: "#ffffff")
        case .discover:
            return card("#ffffff") + "<circle cx=\"31\" cy=\"13\" r=\"5\" fill=\"#f47216\"/>"
                + text("DISC", x: 15, y: 16, size: 8, fill: "#1b1b1f")
        case .diners:
            return card("#ffffff")
                + "<circle cx=\"20\" cy=\"13\" r=\"8\" fill=\"none\" stroke=\"#0a5aa6\" stroke-width=\"2.5\"/>"
                + "<path d=\"M20 6v14\" stroke=\"#0a5aa6\" stroke-width=\"2\"/>"
        case .jcb:
            return card("#ffffff") + "<rect x=\"7\" y=\"5\" width=\"8\" height=\"16\" rx=\"2\" fill=\"#0b4ea2\"/>"
                + "<rect x=\"16\" y=\"5\" width=\"8\" height=\"16\" rx=\"2\" fill=\"#d71920\"/>"
                + "<rect x=\"25\" y=\"5\" width=\"8\" height=\"16\" rx=\"2\" fill=\"#0a8a3a\"/>"
        case .unionpay:
            return card("#ffffff") + "<path d=\"M9 4h9l-4 18H5z\" fill=\"#d71920\"/>"
                + "<path d=\"M17 4h9l-4 18h-9z\" fill=\"#0b4ea2\"/><path d=\"M25 4h9l-4 18h-9z\" fill=\"#0a8a3a\"/>"
        default:
            return card("#f3f4f8")
                + text(String(brand.displayName.uppercased().prefix(5)), y: 16, size: 8, fill: "#1b1b1f")
        }
    }
}

/// `HTMLText.escape` under a name this file can use without importing HTTPServer into the drawing code.
enum HTMLTextEscaping {
    static func escape(_ text: String) -> String { CheckoutPage.e(text) }
}
