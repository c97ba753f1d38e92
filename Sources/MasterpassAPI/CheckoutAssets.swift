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

    /// `checkout.js`: live brand detection and formatting of the card number, inline Luhn, expiry and security
    /// code checks as the shopper types (a field is judged once complete or left), the expiry slash, "same as
    /// billing", the processing state on submit, focus on the error summary, and the device signals for
    /// profiling. The page works without it.
    static let script: String = """
        (function () {
          "use strict";
          var d = document;
          var form = d.getElementById("checkout-form");
          if (!form) { return; }
          var table = \(brandTableJSON);
          var page = JSON.parse(d.getElementById("checkout-data").textContent);
          function digitsOf(text) { return text.replace(/\\D/g, ""); }
          function luhn(digits) {
            var sum = 0;
            for (var i = 0; i < digits.length; i++) {
              var n = digits.charCodeAt(digits.length - 1 - i) - 48;
              if (i % 2 === 1) { n *= 2; if (n > 9) { n -= 9; } }
              sum += n;
            }
            return digits.length > 0 && sum % 10 === 0;
          }
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
          // An inline error under `field` (a sentence), or none; the field's description follows it.
          function showError(field, message) {
            var id = field.id + "-error", line = d.getElementById(id);
            var described = (field.getAttribute("aria-describedby") || "").split(" ").filter(function (x) {
              return x && x !== id;
            });
            if (message) {
              if (!line) {
                line = d.createElement("p"); line.className = "field-error"; line.id = id;
                var anchor = field.parentNode.classList.contains("with-logos") ? field.parentNode : field;
                anchor.insertAdjacentElement("afterend", line);
              }
              line.textContent = message;
              field.setAttribute("aria-invalid", "true");
              described.push(id);
            } else {
              if (line) { line.parentNode.removeChild(line); }
              field.removeAttribute("aria-invalid");
            }
            if (described.length) { field.setAttribute("aria-describedby", described.join(" ")); }
            else { field.removeAttribute("aria-describedby"); }
          }
          var number = d.getElementById("cardNumber");
          var badge = d.getElementById("card-brand");
          var cvc = d.getElementById("securityCode");
          var expiry = d.getElementById("expiry");
          var currentBrand = null;
          function numberProblem(final) {
            var digits = digitsOf(number.value), brand = detect(digits);
            if (!digits) { return final ? page.text.numberIncomplete : ""; }
            if (brand && page.allowed.indexOf(brand) < 0) {
              return page.text.brandNotAccepted.replace("{brand}", table.names[brand]);
            }
            // Judged at every complete length of the brand (a wrong check digit shows at once), and when left.
            var lengths = (brand && table.lengths[brand]) || [12, 13, 14, 15, 16, 17, 18, 19];
            var longest = Math.max.apply(null, lengths);
            if (lengths.indexOf(digits.length) >= 0) { return luhn(digits) ? "" : page.text.numberInvalid; }
            if (digits.length > longest || (final && digits.length >= 12)) { return page.text.numberInvalid; }
            return final ? page.text.numberIncomplete : "";
          }
          function expiryProblem(final) {
            var digits = digitsOf(expiry.value);
            if (digits.length < 4) { return final && digits.length ? page.text.expiryInvalid : ""; }
            var month = parseInt(digits.slice(0, 2), 10), year = 2000 + parseInt(digits.slice(2, 4), 10);
            if (month < 1 || month > 12) { return page.text.expiryInvalid; }
            var now = new Date(), thisYear = now.getFullYear(), thisMonth = now.getMonth() + 1;
            if (year < thisYear || (year === thisYear && month < thisMonth)) { return page.text.expiryPast; }
            if (year > thisYear + 20) { return page.text.expiryInvalid; }
            return "";
          }
          function cvcProblem(final) {
            var digits = digitsOf(cvc.value), size = currentBrand ? table.cvc[currentBrand] : 0;
            if (!digits) { return ""; }
            if (size ? digits.length === size : (digits.length === 3 || digits.length === 4)) { return ""; }
            if (!final && digits.length < (size || 3)) { return ""; }
            return page.text.cvcInvalid.replace("{n}", String(size || 3));
          }
          if (number && badge) {
            var update = function (initial, final) {
              var digits = digitsOf(number.value).slice(0, 19);
              var brand = detect(digits);
              var end = number.selectionStart === number.value.length;
              number.value = format(digits, brand);
              if (end && d.activeElement === number) { number.setSelectionRange(number.value.length, number.value.length); }
              var problem = numberProblem(final);
              var refused = !!brand && page.allowed.indexOf(brand) < 0;
              // No brand lights up for a number that is refused or fails its check digit.
              var lit = brand && !refused && !(problem && problem !== page.text.numberIncomplete) ? brand : null;
              currentBrand = brand && !refused ? brand : null;
              // With one brand lit, the number gets the room the other logos took.
              number.parentNode.classList.toggle("one-brand", !!lit);
              var icons = d.querySelectorAll(".brands [data-brand]");
              for (var i = 0; i < icons.length; i++) {
                var mine = icons[i].getAttribute("data-brand") === lit;
                icons[i].classList.toggle("active", mine);
                icons[i].classList.toggle("dimmed", !!lit && !mine);
              }
              if (!brand) { badge.textContent = digits.length >= 2 ? page.text.brandUnknown : ""; }
              else if (refused) { badge.textContent = table.names[brand] + " \\u2014 " + page.text.brandRefused; }
              else {
                badge.textContent = table.names[brand];
                if (cvc) { cvc.setAttribute("maxlength", String(table.cvc[brand])); }
              }
              // The server's verdict stands until the shopper edits the number.
              if (!initial) { showError(number, problem); }
            };
            number.addEventListener("input", function () { update(false, false); });
            number.addEventListener("blur", function () { if (number.value) { update(false, true); } });
            update(true, false);
          }
          if (expiry) {
            expiry.addEventListener("input", function (event) {
              var digits = digitsOf(expiry.value).slice(0, 4);
              if (event.inputType !== "deleteContentBackward") {
                if (digits.length === 1 && digits > "1") { digits = "0" + digits; }
                expiry.value = digits.length >= 2 ? digits.slice(0, 2) + "/" + digits.slice(2) : digits;
              }
              showError(expiry, expiryProblem(false));
            });
            expiry.addEventListener("blur", function () { if (expiry.value) { showError(expiry, expiryProblem(true)); } });
          }
          if (cvc) {
            cvc.addEventListener("input", function () {
              cvc.value = digitsOf(cvc.value).slice(0, 4);
              showError(cvc, cvcProblem(false));
            });
            cvc.addEventListener("blur", function () { if (cvc.value) { showError(cvc, cvcProblem(true)); } });
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
          var usingSaved = function () {
            var chosen = d.querySelector("input[name=savedCardId]:checked");
            return !!(chosen && chosen.value);
          };
          if (saved.length && cardFields) {
            var choose = function () { cardFields.hidden = usingSaved(); };
            for (var s = 0; s < saved.length; s++) { saved[s].addEventListener("change", choose); }
            choose();
          }
          var pay = form.querySelector("button.pay");
          var sending = false;
          form.addEventListener("submit", function (event) {
            if (sending) { event.preventDefault(); return; }
            if (!usingSaved()) {
              var first = null;
              if (number) { update(false, true); if (number.getAttribute("aria-invalid") === "true") { first = number; } }
              if (expiry && expiry.value) { showError(expiry, expiryProblem(true)); }
              if (!first && expiry && expiry.getAttribute("aria-invalid") === "true") { first = expiry; }
              if (cvc && cvc.value) { showError(cvc, cvcProblem(true)); }
              if (!first && cvc && cvc.getAttribute("aria-invalid") === "true" && cvc.value) { first = cvc; }
              // Empty fields go to the server, which answers with a summary; typed mistakes stay here.
              if (first && number.value) { event.preventDefault(); first.focus(); return; }
            }
            sending = true;
            if (pay) {
              pay.disabled = true;
              pay.setAttribute("aria-busy", "true");
              pay.classList.add("processing");
              var label = pay.querySelector(".label");
              if (label) { label.textContent = pay.getAttribute("data-processing"); }
            }
          });
          // Back from the cache (history): the button is usable again.
          window.addEventListener("pageshow", function () {
            sending = false;
            if (pay) { pay.disabled = false; pay.removeAttribute("aria-busy"); pay.classList.remove("processing"); }
          });
          var summary = d.getElementById("error-summary");
          if (summary) { summary.focus(); }
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

    /// `checkout.css`: one column on a phone, summary beside the form on a desktop, system fonts, text at least
    /// 4.5:1 against its background, a focus ring of at least 3:1 against every background it sits on.
    static let styleSheet: String = """
        :root { color-scheme: light; --ink: #1b1b1f; --muted: #4a4a55; --line: #767682; --accent: #0b57d0;
          --accent-ink: #ffffff; --error: #b3261e; --paper: #ffffff; --wash: #f3f4f8; --focus: #1b1b1f; }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--wash); color: var(--ink);
          font: 16px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
        main { max-width: 32rem; margin: 0 auto; padding: .75rem; }
        .sheet { background: var(--paper); border-radius: 12px; padding: 1rem 1.25rem 1.25rem;
          box-shadow: 0 1px 3px rgba(0,0,0,.15); }
        header.merchant { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: baseline;
          gap: 0 1rem; border-bottom: 1px solid #d5d6de; padding-bottom: .5rem; margin-bottom: .5rem; }
        header.merchant h1 { font-size: 1.125rem; margin: 0; overflow-wrap: anywhere; }
        header.merchant .secure { flex-basis: 100%; margin: 0; }
        .amount { font-size: 1.375rem; font-weight: 700; white-space: nowrap; margin: 0; }
        .with-logos { position: relative; }
        .with-logos input { padding-right: 8.5rem; }
        .with-logos.one-brand input { padding-right: 3rem; }
        .brands { position: absolute; right: .5rem; top: 50%; transform: translateY(-50%); display: flex; gap: 3px;
          list-style: none; padding: 0; margin: 0; pointer-events: none; }
        .brands li { display: flex; line-height: 0; }
        .brands li:nth-child(n+5) { display: none; }
        .brands li.dimmed { display: none; }
        .brands li.active { display: flex; }
        .brands .logo { width: 30px; height: 20px; }
        fieldset { border: 0; padding: 0; margin: 0 0 .5rem; min-width: 0; }
        legend { font-weight: 700; margin: .25rem 0 0; padding: 0; }
        label { display: block; font-weight: 600; margin: .5rem 0 .2rem; }
        .hint { color: var(--muted); font-size: .875rem; font-weight: 400; }
        label .hint { display: inline; margin-left: .35rem; }
        input[type=text], input[type=email], input[type=tel], select { width: 100%; font: inherit;
          padding: .55rem .7rem; border: 1px solid var(--line); border-radius: 6px; background: #fff; color: var(--ink); }
        select { appearance: auto; }
        input[aria-invalid=true], select[aria-invalid=true] { border: 2px solid var(--error); }
        .row { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 0 .75rem; align-items: end; }
        .check { display: flex; gap: .5rem; align-items: flex-start; font-weight: 400; }
        .check input { margin-top: .2rem; width: 1.1rem; height: 1.1rem; flex: none; }
        .saved label { font-weight: 400; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
        .field-error { color: var(--error); font-size: .875rem; margin: .2rem 0 0; font-weight: 600; }
        .summary { border: 2px solid var(--error); border-radius: 8px; padding: .5rem 1rem; margin: .5rem 0; }
        .summary h2 { font-size: 1rem; margin: 0 0 .25rem; color: var(--error); }
        .summary ul { margin: 0; padding-left: 1.25rem; }
        .summary a { color: var(--error); }
        .brand-badge { min-height: 1.25em; color: var(--muted); font-size: .8125rem; margin: .15rem 0 0; }
        button { font: inherit; font-weight: 700; border-radius: 6px; padding: .7rem 1rem; width: 100%;
          cursor: pointer; }
        button.pay { background: var(--accent); color: var(--accent-ink); border: 0; margin-top: .75rem;
          font-size: 1.0625rem; }
        button.pay.processing { background: #3d4f7a; cursor: progress; }
        button.pay.processing .label::before { content: ""; display: inline-block; width: .9em; height: .9em;
          margin-right: .5em; border: 2px solid #fff; border-right-color: transparent; border-radius: 50%;
          vertical-align: -.1em; animation: spin .8s linear infinite; }
        @keyframes spin { to { transform: rotate(360deg); } }
        @media (prefers-reduced-motion: reduce) { button.pay.processing .label::before { animation: none; } }
        button.cancel { background: transparent; color: var(--accent); border: 1px solid var(--accent);
          margin-top: .5rem; padding: .5rem 1rem; font-weight: 600; }
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; box-shadow: 0 0 0 5px #ffffff; }
        .summary:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
        footer { color: var(--muted); font-size: .8125rem; text-align: center; margin-top: .75rem; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
          white-space: nowrap; }
        code { overflow-wrap: anywhere; }
        [hidden] { display: none !important; }
        @media (min-width: 56rem) {
          main { max-width: 60rem; padding: 2rem 1rem; }
          .sheet:not(.message) { display: grid; grid-template-columns: 19rem minmax(0, 1fr); gap: 0 2.5rem;
            padding: 2rem; }
          header.merchant { display: block; border-bottom: 0; border-right: 1px solid #d5d6de; padding: 0 1.5rem 0 0; }
          header.merchant h1 { font-size: 1.25rem; margin-bottom: .5rem; }
          .amount { font-size: 2rem; margin-bottom: .75rem; }
          .pane { min-width: 0; }
        }
        @media (max-width: 26rem) { main { padding: 0; } .sheet { border-radius: 0; padding: .75rem 1rem 1rem; }
          .brands li:nth-child(n+4) { display: none; } .brands li.active { display: flex; }
          .with-logos input { padding-right: 6.75rem; } .with-logos.one-brand input { padding-right: 3rem; }
          label .hint { display: block; margin-left: 0; } }

        """

    /// A plain Click to Pay mark, drawn for CardVault (not the network's artwork).
    static let clickToPayLogo: String = """
        <svg xmlns="http://www.w3.org/2000/svg" width="160" height="40" viewBox="0 0 160 40" role="img" \
        aria-label="Click to Pay"><rect x="1" y="1" width="158" height="38" rx="8" fill="#ffffff" stroke="#1b1b1f" \
        stroke-width="2"/><path d="M14 12h10l-4 8h6l-12 10 4-9h-6z" fill="#0b57d0"/><text x="36" y="26" \
        font-family="Arial, sans-serif" font-size="15" font-weight="700" fill="#1b1b1f">Click to Pay</text></svg>

        """
}
