// The quality corpus's documents: what a small appliance company ("Kestrel Home") would put in its agent's knowledge
// base. An FAQ in markdown, a returns/refunds/warranty policy delivered as a PDF (built here with pdf-lib from the
// text below, so no binary is checked in), and a product page as HTML with the navigation, cookie banner and footer
// a real page carries. bench/knowledge/corpus.mjs labels questions against passages of these texts.
import { PDFDocument, StandardFonts } from 'pdf-lib';

export const FAQ_TITLE = 'Kestrel Home — Frequently asked questions';

export const FAQ_MARKDOWN = `# Kestrel Home — Frequently asked questions

## Ordering

### How do I place an order?
You can order on kestrelhome.example, in the Kestrel Home app, or by phone with our sales team on 0800 555 0142 (Monday to Saturday, 8 am to 8 pm). Orders placed before 2 pm on a weekday are packed the same day.

### Can I change or cancel my order?
You can change the delivery address or cancel an order free of charge until it has been packed. Once the order shows "Packed" in your account, it can no longer be changed; refuse the delivery or return it instead under our returns policy.

### Do you sell gift cards?
Yes. Digital gift cards from 10 to 500 pounds are sent by email within a few minutes, and never expire. A gift card cannot be exchanged for cash.

## Payment

### Which payment methods do you accept?
We accept Visa, Mastercard and American Express, PayPal, Apple Pay and Google Pay. We do not accept cheques or cash on delivery.

### Can I pay in instalments?
Orders over 300 pounds can be spread over 3, 6 or 12 monthly instalments with Kestrel Flex, interest-free for 3 and 6 months and at 9.9% APR for 12 months. Approval takes about two minutes at checkout and is subject to a credit check.

### When will my card be charged?
Your card is authorised when you order and charged only when the order is dispatched. If an item is out of stock, you are never charged for it.

### Do prices include VAT?
All prices shown on the website include VAT at the current rate. Business customers can download a VAT invoice from the Orders page of their account.

## Delivery

### How much does delivery cost?
Standard delivery is free on orders over 50 pounds; below that it costs 4.95 pounds. Next-day delivery costs 7.95 pounds for orders placed before 2 pm on a weekday.

### How long does delivery take?
Standard delivery takes 2 to 4 working days across mainland UK. Deliveries to the Scottish Highlands, the islands and Northern Ireland take 3 to 6 working days.

### Do you deliver abroad?
We currently deliver to the United Kingdom, Ireland, France, Germany and the Netherlands. International orders take 5 to 8 working days and any customs duties are included in the price at checkout.

### How do I track my parcel?
When your order is dispatched we send a tracking link by email and text message. You can also see the courier's live updates under Orders in the app.

### What if I'm not home when the courier comes?
The courier leaves a card and tries again the next working day. After two missed attempts the parcel is taken to your nearest pickup point, where it is held for 14 days.

### My parcel arrived damaged. What should I do?
Take photos of the box and the product, and report it within 48 hours through the app or on the contact page. We send a replacement at no cost and arrange the collection of the damaged item.

## Your account

### I forgot my password.
Choose "Forgot password" on the sign-in page and we will email you a reset link, which is valid for 30 minutes. If the email does not arrive, check your spam folder.

### How do I delete my account?
Go to Settings, then Privacy, then "Delete my account". Your personal data is erased within 30 days, except order records we must keep for seven years for tax purposes.

### How do I unsubscribe from marketing emails?
Every marketing email has an unsubscribe link at the bottom. You can also switch off newsletters under Settings, then Notifications.

## The Kestrel Home app

### Which phones does the app work on?
The app runs on iPhone with iOS 16 or later and on Android 10 or later. It is free and has no subscription.

### How do I connect a device to Wi-Fi?
Open the app, tap "Add device" and follow the steps. Your device needs a 2.4 GHz Wi-Fi network; 5 GHz-only networks are not supported. Keep the phone within 3 metres of the device during set-up.

### Can several people control the same device?
Yes. The owner can invite up to eight household members under Home, then Members. Each member uses their own Kestrel Home account.

### Does the app work with voice assistants?
Kestrel devices work with Amazon Alexa, Google Assistant and Apple Home (through Matter). Link them under Settings, then Integrations.

## Installation and support

### Do you offer installation?
For washing machines, dishwashers and fridge freezers we offer installation by a qualified engineer for 49 pounds, booked at checkout. We also remove and recycle your old appliance for an extra 20 pounds.

### How do I contact customer support?
Our support team answers on live chat in the app and on 0800 555 0199, every day from 8 am to 10 pm. Email support@kestrelhome.example and we reply within one working day.

### Where can I find the user manual?
Every product page has a "Manuals" tab with PDF manuals in English, French and German. The serial number is printed on the label under the device.

### Do you have a loyalty programme?
Kestrel Rewards gives you 1 point per pound spent; 100 points are worth 5 pounds off your next order. Points expire 24 months after they were earned.

### Do you offer student or NHS discounts?
Students get 10% off with a valid student ID verified through Student Beans, and NHS staff get 15% off after verifying with their NHS email address. Discounts cannot be combined with other promotions.
`;

export const POLICY_TITLE = 'Kestrel Home Returns, Refunds and Warranty Policy';

/** The policy's text: numbered sections of paragraphs, laid out on PDF pages by buildPolicyPdf. */
export const POLICY_SECTIONS = [
  ['Kestrel Home Returns, Refunds and Warranty Policy', [
    'Version 4.2, effective 1 March 2026. This policy applies to products bought from Kestrel Home Ltd on our website, in our app or by phone. It does not affect your statutory rights under the Consumer Rights Act 2015.',
  ]],
  ['1. Your right to change your mind', [
    'You may return most products within 30 days of delivery for any reason, as long as the product is unused, complete and in its original packaging. The 30-day period starts on the day after you, or someone you nominate, receive the product.',
    'Opened products that have been used can still be returned within 30 days, but we may reduce the refund by up to 20% to reflect handling and wear beyond what is needed to examine the product.',
  ]],
  ['2. Products that cannot be returned', [
    'For hygiene reasons we cannot accept the return of opened hair care and personal care items, such as hair dryers, shavers and electric toothbrushes, unless they are faulty. Made-to-order items, such as integrated appliances cut to size, and gift cards are also excluded.',
  ]],
  ['3. How to return a product', [
    'Start a return under Orders in the app or on our website and choose a reason. We email you a prepaid returns label and a QR code. Small items can be dropped at any Parcelpoint location or posted at a post office. For large appliances over 25 kg we arrange a free collection from your home within 5 working days.',
    'Please remove any personal data from smart devices by performing a factory reset before you send them back.',
  ]],
  ['4. Return shipping costs', [
    'Returns are free within the United Kingdom. Customers in Ireland and the European Union pay a flat return shipping fee of 9.95 euros, which is deducted from the refund, unless the product is faulty or we sent the wrong item.',
  ]],
  ['5. Refunds', [
    'We refund you within 14 days of receiving the returned product, to the payment method you used to pay. Refunds to cards usually appear on your statement within 3 to 5 working days after we issue them. Orders paid with a gift card are refunded as a new gift card.',
    'If you paid with Kestrel Flex instalments, the finance agreement is cancelled and any instalments already paid are refunded in full. The original delivery charge is refunded when you return the whole order; express delivery upgrades are not refunded.',
  ]],
  ['6. Exchanges', [
    'We do not exchange products directly. To swap a product for a different colour or model, return the original for a refund and place a new order. If the price has dropped within 14 days of your purchase, contact us and we refund the difference once.',
  ]],
  ['7. Faulty products', [
    'If a product develops a fault within 30 days of delivery, you are entitled to a full refund or a replacement, as you prefer. After 30 days and within six months, we will first offer a repair or a replacement; if that fails, you may ask for a refund.',
    'We may ask you for a short video or photos of the fault, which helps our technicians diagnose it quickly.',
  ]],
  ['8. Manufacturer warranty', [
    'All Kestrel-branded products come with a two-year manufacturer warranty covering faults in materials and workmanship. Large kitchen appliances, namely fridge freezers, washing machines, dishwashers and ovens, have a five-year warranty on parts and labour. Motors in washing machines and compressors in fridges are covered for ten years.',
    'The warranty does not cover accidental damage, misuse, normal wear of consumable parts such as filters, seals and batteries, commercial use, or repairs made by anyone other than an authorised Kestrel engineer.',
  ]],
  ['9. Making a warranty claim', [
    'To make a claim, register the product in the app or call 0800 555 0199 with your order number and the serial number from the label on the device. An engineer visit is normally booked within 3 working days. If a product cannot be repaired economically, we replace it with the same model or one of equal or higher specification.',
    'The warranty is transferable: if you sell or give away the product, the remaining warranty passes to the new owner with the original proof of purchase.',
  ]],
  ['10. Extended protection', [
    'Kestrel Care extends cover to five years for any product and adds accidental damage, for example liquid spills or drops. It costs 4.99 pounds per month per product, or 59 pounds per year, and can be cancelled at any time with no fee. Claims under Kestrel Care have a 25 pound excess per claim, and you may make up to three claims per year.',
  ]],
  ['11. Price promise', [
    'If you find the same product cheaper at a UK retailer within 7 days of buying from us, we match the price and refund the difference. The price match excludes marketplace sellers, clearance sales and bundle offers.',
  ]],
  ['12. Complaints', [
    'If you are unhappy with how we handled your return or claim, write to complaints@kestrelhome.example. We acknowledge complaints within 2 working days and aim to resolve them within 8 weeks. If you are still not satisfied, you can refer the matter to the Retail Ombudsman, free of charge.',
  ]],
];

/** The policy as plain text, one paragraph per line (what a reader of the PDF sees). */
export const POLICY_TEXT = POLICY_SECTIONS.map(([heading, paras]) => [heading, ...paras].join('\n')).join('\n\n');

/** The policy printed into a PDF: Helvetica 11 pt, lines wrapped at the page's width, a new page when one is full. */
export async function buildPolicyPdf() {
  const doc = await PDFDocument.create();
  doc.setTitle(POLICY_TITLE);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const width = 612 - 2 * 56;
  let page;
  let y = 0;
  const newPage = () => {
    page = doc.addPage([612, 792]);
    y = 792 - 60;
  };
  const line = (text, f, size) => {
    if (!page || y < 60) newPage();
    page.drawText(text, { x: 56, y, font: f, size });
    y -= size * 1.5;
  };
  const wrap = (text, f, size) => {
    const lines = [];
    let current = '';
    for (const word of text.split(' ')) {
      const next = current ? `${current} ${word}` : word;
      if (f.widthOfTextAtSize(next, size) > width && current) {
        lines.push(current);
        current = word;
      } else current = next;
    }
    if (current) lines.push(current);
    return lines;
  };
  for (const [heading, paras] of POLICY_SECTIONS) {
    y -= 6;
    for (const l of wrap(heading, bold, 13)) line(l, bold, 13);
    for (const p of paras) {
      for (const l of wrap(p, font, 11)) line(l, font, 11);
      y -= 6;
    }
  }
  return Buffer.from(await doc.save());
}

export const PRODUCT_TITLE = 'Kestrel AirPure 400 Smart Air Purifier';

export const PRODUCT_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Kestrel AirPure 400 Smart Air Purifier | Kestrel Home</title>
  <style>body{font-family:sans-serif}.banner{position:fixed}</style>
  <script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}gtag('js',new Date());</script>
</head>
<body>
  <div class="cookie-banner" role="dialog">We use cookies to improve your experience and for marketing. <a href="/cookies">Cookie settings</a> <button>Accept all</button></div>
  <header role="banner">
    <a href="/" class="logo">Kestrel Home</a>
    <nav aria-label="Main">
      <ul>
        <li><a href="/kitchen">Kitchen</a></li><li><a href="/laundry">Laundry</a></li><li><a href="/air">Heating &amp; air</a></li>
        <li><a href="/smart-home">Smart home</a></li><li><a href="/offers">Offers</a></li><li><a href="/support">Help &amp; support</a></li>
      </ul>
    </nav>
    <form role="search"><input type="search" placeholder="Search products"><button>Search</button></form>
    <a href="/basket">Basket (0)</a> <a href="/account">Sign in</a>
  </header>
  <nav aria-label="Breadcrumb"><a href="/">Home</a> › <a href="/air">Heating &amp; air</a> › <a href="/air/purifiers">Air purifiers</a></nav>
  <main>
    <article>
      <h1>Kestrel AirPure 400 Smart Air Purifier</h1>
      <p class="price">£249.00 <span>or 3 interest-free payments of £83.00 with Kestrel Flex</span></p>
      <p>The AirPure 400 cleans the air of rooms up to 48 square metres, removing 99.97% of particles as small as 0.3 microns: pollen, dust, pet dander, smoke and mould spores. It is quiet enough for a bedroom and connects to the Kestrel Home app, so you can check the air quality from anywhere.</p>

      <h2>Three-stage filtration</h2>
      <p>Air passes through a washable pre-filter that catches hair and large dust, then a true H13 HEPA filter, then an activated carbon layer that absorbs cooking smells, smoke and volatile organic compounds. The HEPA and carbon layers are combined in one cylindrical filter cartridge that slides out from the base.</p>

      <h2>Filter replacement</h2>
      <p>Replace the combined filter cartridge every 6 to 12 months, depending on use; the ring light turns orange and the app sends a reminder when 10% of the filter life remains. Genuine replacement filters (model KF-400) cost £39.99, or £34.99 each with a filter subscription delivered automatically. Rinse the pre-filter under the tap once a month and let it dry for 24 hours before refitting it.</p>

      <h2>Performance</h2>
      <ul>
        <li>Clean air delivery rate (CADR): 400 cubic metres per hour</li>
        <li>Cleans a 20 square metre room five times an hour</li>
        <li>Laser particle sensor measuring PM2.5 and PM10, shown as a colour ring: blue is good, purple is poor</li>
      </ul>

      <h2>Quiet operation and sleep mode</h2>
      <p>Sleep mode runs the fan at its lowest speed at just 22 decibels, quieter than a whisper, and dims every light on the unit. On its highest setting, the purifier reaches 52 decibels. A child lock disables the buttons on the top panel.</p>

      <h2>Smart features</h2>
      <p>In auto mode the fan speed follows the air quality the sensor measures. Set schedules and see a 30-day air quality history in the Kestrel Home app, and control the purifier with Alexa or Google Assistant. The purifier keeps working with its buttons when the Wi-Fi is down.</p>

      <h2>Energy use</h2>
      <p>The AirPure 400 draws between 4 and 45 watts depending on fan speed, and less than 1 watt on standby. Running it all night in sleep mode costs less than a penny.</p>

      <h2>Technical specifications</h2>
      <table>
        <tr><th>Dimensions</th><td>Height 56 cm, diameter 26 cm</td></tr>
        <tr><th>Weight</th><td>5.8 kg</td></tr>
        <tr><th>Power cable</th><td>1.8 m, UK plug</td></tr>
        <tr><th>Colours</th><td>Chalk white and graphite grey</td></tr>
        <tr><th>Connectivity</th><td>2.4 GHz Wi-Fi, Bluetooth for set-up</td></tr>
      </table>

      <h2>In the box</h2>
      <p>The purifier, one KF-400 filter cartridge already fitted, a quick start guide and the power cable. The pre-filter is built in.</p>

      <h2>Warranty and delivery</h2>
      <p>The AirPure 400 comes with a two-year warranty, which you can extend to five years with Kestrel Care. Free next-day delivery when you order before 2 pm.</p>

      <h2>Customer questions</h2>
      <h3>Does it remove viruses?</h3>
      <p>The H13 HEPA filter captures airborne particles down to 0.1 microns, which includes many bacteria and virus-carrying droplets, but no purifier can guarantee protection against infection.</p>
      <h3>Does it produce ozone?</h3>
      <p>No. The AirPure 400 has no ioniser or UV lamp and produces no ozone.</p>
      <h3>Can I use it in a nursery?</h3>
      <p>Yes, many parents do: the night light can be turned off completely and the child lock keeps little hands away from the controls.</p>
    </article>
  </main>
  <aside class="related"><h2>You may also like</h2><ul><li><a href="/air/purifiers/airpure-200">AirPure 200 — £149</a></li><li><a href="/air/dehumidifiers/dryair-12">DryAir 12L dehumidifier — £199</a></li></ul></aside>
  <footer role="contentinfo">
    <div><h4>Help</h4><a href="/delivery">Delivery</a> <a href="/returns">Returns</a> <a href="/warranty">Warranty</a> <a href="/contact">Contact us</a></div>
    <div><h4>About</h4><a href="/about">About Kestrel</a> <a href="/careers">Careers</a> <a href="/press">Press</a> <a href="/sustainability">Sustainability</a></div>
    <p>Sign up to our newsletter for 10% off your first order.</p>
    <p>© 2026 Kestrel Home Ltd. Registered in England and Wales, company number 09876543. VAT number GB 123 4567 89.</p>
  </footer>
</body>
</html>
`;

/** The three documents as POST /v1/knowledge_bases/{id}/documents bodies, keyed by the corpus's document names. */
export async function corpusDocuments() {
  return {
    faq: { title: FAQ_TITLE, text: FAQ_MARKDOWN, content_type: 'text/markdown' },
    policy: { title: POLICY_TITLE, file: { data: (await buildPolicyPdf()).toString('base64'), content_type: 'application/pdf' } },
    product: { title: PRODUCT_TITLE, file: { data: Buffer.from(PRODUCT_HTML).toString('base64'), content_type: 'text/html' } },
  };
}
