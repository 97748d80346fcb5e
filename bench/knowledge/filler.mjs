// Filler documents for the knowledge bench: what else a large support knowledge base holds — manuals, policies and
// guides of many products of many (made-up) companies, in markdown with headings. Generated from a seed (the same
// documents every run) out of sentence templates and word lists, with made-up brand and model names for a long tail,
// so the text has the vocabulary of the quality corpus's questions (refund, warranty, delivery, filter, Wi-Fi, …)
// spread over many chunks, as in a real base, rather than one paragraph repeated.

/** mulberry32: a small seeded PRNG. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const w = (s) => s.trim().split(/\s+/);

const PRODUCTS = w(`kettle toaster blender microwave oven hob cooker dishwasher fridge freezer washer dryer vacuum
  purifier humidifier dehumidifier heater fan radiator thermostat boiler camera doorbell speaker headphones earbuds
  television soundbar projector router extender printer scanner monitor laptop tablet phone charger powerbank watch
  tracker scale shaver trimmer toothbrush hairdryer straightener iron steamer mixer juicer grinder airfryer
  slowcooker breadmaker sewing-machine lawnmower trimmer-line drill saw sander bicycle scooter pram car-seat
  mattress pillow duvet sofa desk chair lamp bulb smart-plug alarm sensor lock safe intercom`);

const NOUNS = w(`account address agreement alarm allowance app appointment assistant balance basket battery bill booking
  bracket brush button cable capacity card cartridge case certificate charge checkout cleaning collection colour
  compartment component condition connection consumption contract cover courier credit customer cycle damage
  deadline deposit detergent device diagnosis discount display door drawer driver drum duration element email
  engineer error exchange excess fault fee filter firmware fitting frame fuse gasket guarantee handle hinge hose
  household installation instalment instruction invoice item kit label leak lid light limit load maintenance manual
  meter mode model motor nozzle notification number order outlet package panel parcel part password payment period
  plug policy postcode power pressure price programme promotion pump purchase receipt recycling refund registration
  reminder repair replacement request reset residue return review room rule safety schedule screen seal serial
  setting shelf signal socket software spare speed stain standby statement status subscription supply surface
  switch tank technician temperature terms timer tray update usage valve vent voltage voucher wall warranty water
  wattage weight wheel wire`);

const VERBS = w(`activate adjust apply arrange assemble attach book cancel charge check clean close collect confirm
  connect contact cover descale detach disconnect download drain dry empty enable enter exchange extend fill fit
  install keep lift lock monitor mount open pair place plug press program reconnect record refund register reinstall
  release remove repair replace report request reset restart return rinse run schedule select send service set
  store switch test tighten track transfer turn unlock unplug update upgrade verify wash wipe`);

const ADJS = w(`automatic available basic compatible complete correct damaged default dry easy electric eligible
  empty energy-efficient express external faulty flexible free full genuine heavy hot internal large latest local
  low manual monthly new next-day optional original personal portable previous quick quiet registered regular
  removable reusable safe secure short single smart soft spare special standard sturdy temporary valid warm wireless`);

const PLACES = w(`kitchen bedroom bathroom garage garden hallway loft office nursery utility-room conservatory basement
  balcony shed studio`);

const TOPICS = [
  'Getting started', 'Unpacking and set-up', 'Safety instructions', 'Installation', 'Connecting to the app', 'Daily use',
  'Programmes and modes', 'Cleaning and care', 'Maintenance schedule', 'Troubleshooting', 'Error codes', 'Energy saving',
  'Warranty information', 'Returns and refunds', 'Delivery and collection', 'Payment and billing', 'Your account',
  'Spare parts and accessories', 'Recycling and disposal', 'Technical data', 'Frequently asked questions',
  'Subscriptions', 'Privacy and data', 'Service visits', 'Accessibility', 'Software updates', 'Storage',
  'Travel and transport', 'Trade customers', 'Promotions and vouchers',
];

const SYLLABLES = w(`ka lo mi ra ven tor sel qua zen bri fal dor nex vi ta lu mor pen sa ri co ner val tic ma jo
  rus hel bo fin gar lex ul tri on ex am`);

const TEMPLATES = [
  'To {verb} the {product}, {verb} the {noun} first and then {verb} the {adj} {noun}.',
  'The {model} comes with a {n}-year {noun} that covers the {noun} and the {noun}.',
  'If the {noun} light flashes {colour}, {verb} the {product} and wait {n} minutes before you {verb} it again.',
  'Do not {verb} the {noun} while the {product} is switched on or connected to the {noun}.',
  'We recommend that you {verb} the {noun} every {n} weeks, or more often if the {product} is used in a {place}.',
  'A {adj} {noun} can be ordered from our spare parts shop for {price} pounds, with {adj} delivery.',
  'Customers who {verb} their {product} within {n} days receive a {adj} {noun} of {n} percent.',
  'Error {code} means that the {noun} is {adj}: {verb} the {noun} and {verb} the {product}.',
  'Your {noun} is sent by email once the {noun} has been confirmed, usually within {n} hours.',
  'The {product} should be placed at least {n} centimetres away from the {noun} and any source of heat.',
  'In {mode} mode the {product} reduces its {noun} by up to {n} percent compared with the {adj} setting.',
  'For a {adj} {noun}, contact the {brand} service team with your {noun} number and proof of purchase.',
  'A {adj} {noun} may be charged if the {noun} is not {adj} when the courier arrives.',
  'The {noun} is not covered when the {product} has been used for commercial purposes or repaired by a third party.',
  'You can {verb} the {noun} in the {brand} app under Settings, then {topicword}.',
  'Refunds for {adj} items are issued to the original payment method within {n} working days.',
  'Deliveries to {region} may take up to {n} working days and need a signature on arrival.',
  'Press and hold the {noun} button for {n} seconds to {verb} the {product} to its factory settings.',
  'If water collects in the {noun}, {verb} the {noun} and check that the {noun} is not blocked.',
  'The {adj} {noun} of the {model} is {n} {unit}, measured under standard test conditions.',
  'Before returning the {product}, {verb} any personal data and pack it in its {adj} packaging.',
  'Our engineers can {verb} the {product} for a fixed fee of {price} pounds, including parts and labour.',
  'Only use {adj} {brand} {noun}s; other {noun}s may damage the {noun} and void the {noun}.',
  'When the {product} is {adj}, the display shows {code} and the {noun} stops automatically.',
  'Monthly plans can be cancelled at any time from your {noun} page, and the {noun} ends at the close of the period.',
  'Keep children and pets away from the {product} while it is {verb}ing and during cooling.',
  'The {model} supports {adj} {noun} over Wi-Fi and Bluetooth, and works with most voice assistants.',
  'Questions about your {noun} or {noun}? Our team is available from {hour} am to {hour2} pm, {days}.',
  'Store the {product} in a {adj} place, away from direct sunlight, with the {noun} removed.',
  'A {noun} older than {n} months is no longer valid and cannot be exchanged for a {noun} or cash.',
  'The {brand} {noun} programme gives members {n} points for every pound spent on {product}s and {noun}s.',
  'We collect your old {product} free of charge when we deliver the new one, and recycle it responsibly.',
  'Prices include VAT; trade customers can request an invoice without VAT from their {noun} manager.',
  'If the {noun} is {adj} on arrival, report it within {n} days with photos of the {noun} and the packaging.',
  'The {noun} sensor measures the {noun} every {n} seconds and adjusts the {noun} to match.',
  'Software updates for the {model} are installed overnight when the {product} is on {noun}.',
];

const COLOURS = w('red amber green blue white orange purple');
const MODES = w('eco turbo night boost quiet auto holiday intensive');
const UNITS = w('kilograms litres watts decibels centimetres minutes');
const REGIONS = ['the Channel Islands', 'the Isle of Man', 'the Scottish Islands', 'Northern Ireland', 'rural areas', 'the Isles of Scilly'];
const DAYS = ['Monday to Friday', 'every day', 'Monday to Saturday', 'on weekdays', 'seven days a week'];

/** Documents of about `chunkTarget` chunks each (under the chunker's 1200 characters), deterministic from `seed`. */
export function fillerGenerator(seed = 1) {
  const r = rng(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  // Zipf-like choice: common words far more often than rare ones, as in real text.
  const zipf = (xs) => xs[Math.floor(xs.length * r() ** 2.2)];
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const cap = (s) => s[0].toUpperCase() + s.slice(1);
  const word = () => Array.from({ length: int(2, 3) }, () => pick(SYLLABLES)).join('');
  const brands = Array.from({ length: 400 }, () => cap(word()));
  let docNo = 0;

  const sentence = (ctx) =>
    pick(TEMPLATES).replace(/\{(\w+)\}/g, (_, slot) => {
      switch (slot) {
        case 'verb': return zipf(VERBS);
        case 'noun': return zipf(NOUNS);
        case 'adj': return zipf(ADJS);
        case 'product': return r() < 0.6 ? ctx.product : zipf(PRODUCTS).replace('-', ' ');
        case 'brand': return ctx.brand;
        case 'model': return ctx.model;
        case 'place': return pick(PLACES).replace('-', ' ');
        case 'colour': return pick(COLOURS);
        case 'mode': return pick(MODES);
        case 'unit': return pick(UNITS);
        case 'region': return pick(REGIONS);
        case 'days': return pick(DAYS);
        case 'code': return `${String.fromCharCode(65 + int(0, 25))}${int(10, 99)}`;
        case 'price': return `${int(5, 250)}.${pick(['00', '49', '95', '99'])}`;
        case 'hour': return String(int(7, 9));
        case 'hour2': return String(int(5, 10));
        case 'topicword': return pick(TOPICS).split(' ')[0];
        default: return String(int(2, 30));
      }
    });

  return function next(chunkTarget = 40) {
    docNo += 1;
    const ctx = { brand: pick(brands), product: zipf(PRODUCTS).replace('-', ' ') };
    ctx.model = `${ctx.brand} ${cap(word())} ${int(100, 990)}`;
    const title = `${ctx.model} ${ctx.product} — ${pick(['user guide', 'owner manual', 'support handbook', 'service guide', 'policies'])} (${docNo})`;
    const parts = [`# ${title}`];
    // The chunker cuts at headings too: about 850 characters of this text make a chunk.
    const target = chunkTarget * 850;
    let length = 0;
    let topics = [...TOPICS].sort(() => r() - 0.5);
    while (length < target) {
      if (!topics.length) topics = [...TOPICS].sort(() => r() - 0.5);
      const heading = `## ${topics.pop()}`;
      parts.push(heading);
      for (let p = int(2, 4); p > 0; p -= 1) {
        const para = Array.from({ length: int(3, 6) }, () => sentence(ctx)).join(' ');
        parts.push(para);
        length += para.length + 2;
      }
    }
    return { title, text: parts.join('\n\n'), content_type: 'text/markdown' };
  };
}
