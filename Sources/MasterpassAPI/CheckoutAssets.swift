import CardKit
import HTTPServer

/// The static files of the hosted checkout: style sheet, script and the Click to Pay logo, served from
/// `/srci/assets/`. The script's brand table is generated from CardKit's ``BrandCatalog/standardRanges``, so the
/// page and the server never disagree about which prefix is which brand.
enum CheckoutAssets {
    /// The brand ranges and the display rules as JSON: `{"ranges":[[brand,low,high,digits],…],"names":{…},
    /// "groups":{…},"cvc":{…}}`.
    static let brandTableJSON: String = {
        let ranges = BrandCatalog.standardRanges.map { range in
            "[\"\(range.brand.id)\",\(range.low),\(range.high),\(range.digits)]"
        }
        let names = CardBrand.allCases.map { "\"\($0.id)\":" + HTMLText.jsonString($0.displayName) }
        let groups = CardBrand.allCases.map {
            "\"\($0.id)\":[" + digitGroups($0).map(String.init).joined(separator: ",") + "]"
        }
        let cvc = CardBrand.allCases.map { "\"\($0.id)\":\($0.securityCode.size)" }
        let lengths = CardBrand.allCases.map { brand in
            "\"\(brand.id)\":[" + brand.lengths.map(String.init).joined(separator: ",") + "]"
        }
        return "{\"ranges\":[" + ranges.joined(separator: ",") + "],\"names\":{" + names.joined(separator: ",")
            + "},\"groups\":{" + groups.joined(separator: ",") + "},\"cvc\":{" + cvc.joined(separator: ",")
            + "},\"lengths\":{" + lengths.joined(separator: ",") + "}}"
    }()

    /// How the page groups a brand's digits while typing: 4-6-5 for American Express, 4-6-4 for Diners Club's 14
    /// digits, fours otherwise.
    static func digitGroups(_ brand: CardBrand) -> [Int] {
        switch brand {
        case .amex: [4, 6, 5]
        case .diners: [4, 6, 4, 5]
        default: [4, 4, 4, 4, 3]
        }
    }

    /// `checkout.js`: live brand detection and formatting of the card number, the expiry slash, "same as billing",
    /// and the device signals for profiling. The page works without it.
    static let script: String = """
        (function () {
          "use strict";
          var d = document;
          var form = d.getElementById("checkout-form");
          if (!form) { return; }
          var table = \(brandTableJSON);
          var page = JSON.parse(d.getElementById("checkout-data").textContent);
          function digitsOf(text) { return text.replace(/\\D/g, ""); }
          function detect(digits) {
            if (!digits) { return null; }
            var best = null, possible = {};
            for (var i = 0; i < table.ranges.length; i++) {
              var r = table.ranges[i], n = r[3];
              if (digits.length >= n) {
                var v = parseInt(digits.slice(0, n), 10);
                if (v >= r[1] && v <= r[2]) {
                  var width = r[2] - r[1];
                  if (!best || n > best.n || (n === best.n && width < best.w)) { best = { b: r[0], n: n, w: width }; }
                }
              } else {
                var scale = Math.pow(10, n - digits.length), p = parseInt(digits, 10);
                if (p >= Math.floor(r[1] / scale) && p <= Math.floor(r[2] / scale)) { possible[r[0]] = true; }
              }
            }
            var others = Object.keys(possible).filter(function (b) { return !best || b !== best.b; });
            if (best && others.length === 0) { return best.b; }
            if (!best && others.length === 1) { return others[0]; }
            return null;
          }
          function format(digits, brand) {
            var groups = table.groups[brand] || [4, 4, 4, 4, 3], out = [], at = 0;
            for (var g = 0; g < groups.length && at < digits.length; g++) {
              out.push(digits.slice(at, at + groups[g])); at += groups[g];
            }
            return out.join(" ");
          }
          var number = d.getElementById("cardNumber");
          var badge = d.getElementById("card-brand");
          var cvc = d.getElementById("securityCode");
          if (number && badge) {
            var update = function (initial) {
              var digits = digitsOf(number.value).slice(0, 19);
              var brand = detect(digits);
              var end = number.selectionStart === number.value.length;
              number.value = format(digits, brand);
              if (end) { number.setSelectionRange(number.value.length, number.value.length); }
              var icons = d.querySelectorAll("[data-brand]");
              for (var i = 0; i < icons.length; i++) {
                icons[i].classList.toggle("active", icons[i].getAttribute("data-brand") === brand);
              }
              var refused = !!brand && page.allowed.indexOf(brand) < 0;
              if (!brand) { badge.textContent = digits.length >= 2 ? page.text.brandUnknown : ""; }
              else if (refused) { badge.textContent = table.names[brand] + " \\u2014 " + page.text.brandRefused; }
              else {
                badge.textContent = table.names[brand];
                if (cvc) { cvc.setAttribute("maxlength", String(table.cvc[brand])); }
              }
              // The server's verdict stands until the shopper edits the number.
              if (!initial) {
                if (refused) { number.setAttribute("aria-invalid", "true"); }
                else { number.removeAttribute("aria-invalid"); }
              }
            };
            number.addEventListener("input", function () { update(false); });
            update(true);
          }
          var expiry = d.getElementById("expiry");
          if (expiry) {
            expiry.addEventListener("input", function (event) {
              var digits = digitsOf(expiry.value).slice(0, 4);
              if (event.inputType === "deleteContentBackward") { return; }
              if (digits.length === 1 && digits > "1") { digits = "0" + digits; }
              expiry.value = digits.length >= 2 ? digits.slice(0, 2) + "/" + digits.slice(2) : digits;
            });
          }
          var same = d.getElementById("shippingSameAsBilling");
          var shipping = d.getElementById("shipping-fields");
          if (same && shipping) {
            var toggle = function () { shipping.hidden = same.checked; };
            same.addEventListener("change", toggle);
            toggle();
          }
          var saved = d.querySelectorAll("input[name=savedCardId]");
          var cardFields = d.getElementById("card-fields");
          if (saved.length && cardFields) {
            var choose = function () {
              var chosen = d.querySelector("input[name=savedCardId]:checked");
              cardFields.hidden = !!(chosen && chosen.value);
            };
            for (var s = 0; s < saved.length; s++) { saved[s].addEventListener("change", choose); }
            choose();
          }
          function signal(name, value) {
            var field = form.querySelector("input[name=" + name + "]");
            if (field) { field.value = String(value).slice(0, 128); }
          }
          signal("javascriptEnabled", "true");
          signal("screenWidth", screen.width);
          signal("screenHeight", screen.height);
          signal("colorDepth", screen.colorDepth);
          signal("timeZoneOffset", new Date().getTimezoneOffset());
          signal("language", navigator.language || "");
          signal("platform", navigator.platform || "");
          signal("javaEnabled", navigator.javaEnabled ? navigator.javaEnabled() : false);
          signal("touchSupport", "ontouchstart" in window || (navigator.maxTouchPoints || 0) > 0);
          signal("hardwareConcurrency", navigator.hardwareConcurrency || "");
          signal("deviceMemory", navigator.deviceMemory || "");
        })();

        """

    /// `checkout.css`: one column, system fonts, text at least 4.5:1 against its background, visible focus.
    static let styleSheet: String = """
        :root { color-scheme: light; --ink: #1b1b1f; --muted: #4a4a55; --line: #8a8a96; --accent: #0b57d0;
          --accent-ink: #ffffff; --error: #b3261e; --paper: #ffffff; --wash: #f3f4f8; }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--wash); color: var(--ink);
          font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
        main { max-width: 34rem; margin: 0 auto; padding: 1rem; }
        .sheet { background: var(--paper); border-radius: 12px; padding: 1.25rem 1.25rem 1.5rem;
          box-shadow: 0 1px 3px rgba(0,0,0,.15); }
        header.merchant { display: flex; justify-content: space-between; align-items: baseline; gap: 1rem;
          border-bottom: 1px solid #d5d6de; padding-bottom: .75rem; margin-bottom: 1rem; }
        header.merchant h1 { font-size: 1.25rem; margin: 0; }
        .amount { font-size: 1.5rem; font-weight: 700; white-space: nowrap; }
        .brands { display: flex; flex-wrap: wrap; gap: .375rem; list-style: none; padding: 0; margin: .25rem 0 1rem; }
        .brands li { border: 1px solid var(--line); border-radius: 4px; padding: .125rem .5rem; font-size: .8125rem;
          color: var(--muted); }
        .brands li.active { border-color: var(--accent); color: var(--accent); font-weight: 700; }
        fieldset { border: 0; padding: 0; margin: 0 0 1rem; }
        legend { font-weight: 700; margin-bottom: .5rem; padding: 0; }
        label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
        .hint { display: block; color: var(--muted); font-size: .875rem; font-weight: 400; }
        input[type=text], input[type=email], input[type=tel] { width: 100%; font: inherit; padding: .625rem .75rem;
          border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--ink); }
        input[aria-invalid=true] { border: 2px solid var(--error); }
        .row { display: grid; grid-template-columns: 1fr 1fr; gap: 0 .75rem; }
        .check { display: flex; gap: .5rem; align-items: flex-start; font-weight: 400; }
        .check input { margin-top: .3rem; width: 1.1rem; height: 1.1rem; }
        .saved label { font-weight: 400; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
        .field-error { color: var(--error); font-size: .9rem; margin: .25rem 0 0; font-weight: 600; }
        .summary { border: 2px solid var(--error); border-radius: 8px; padding: .75rem 1rem; margin-bottom: 1rem; }
        .summary h2 { font-size: 1rem; margin: 0 0 .25rem; color: var(--error); }
        .summary a { color: var(--error); }
        .brand-badge { min-height: 1.5em; color: var(--muted); font-size: .875rem; margin: .25rem 0 0; }
        button { font: inherit; font-weight: 700; border-radius: 6px; padding: .75rem 1rem; width: 100%;
          cursor: pointer; }
        button.pay { background: var(--accent); color: var(--accent-ink); border: 0; margin-top: .5rem; }
        button.cancel { background: transparent; color: var(--accent); border: 1px solid var(--accent);
          margin-top: .75rem; }
        :focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
        footer { color: var(--muted); font-size: .8125rem; text-align: center; margin-top: 1rem; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
          white-space: nowrap; }
        [hidden] { display: none !important; }
        @media (max-width: 420px) { main { padding: .5rem; } .sheet { padding: 1rem; border-radius: 0; }
          .row { grid-template-columns: 1fr; } .amount { font-size: 1.25rem; } }

        """

    /// A plain Click to Pay mark, drawn for CardVault (not the network's artwork).
    static let clickToPayLogo: String = """
        <svg xmlns="http://www.w3.org/2000/svg" width="160" height="40" viewBox="0 0 160 40" role="img" \
        aria-label="Click to Pay"><rect x="1" y="1" width="158" height="38" rx="8" fill="#ffffff" stroke="#1b1b1f" \
        stroke-width="2"/><path d="M14 12h10l-4 8h6l-12 10 4-9h-6z" fill="#0b57d0"/><text x="36" y="26" \
        font-family="Arial, sans-serif" font-size="15" font-weight="700" fill="#1b1b1f">Click to Pay</text></svg>

        """
}
