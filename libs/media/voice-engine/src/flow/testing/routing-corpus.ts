import type { ChatMessage } from '@parley/llm';
import type { AgentFlow } from '../../agent-settings';

/**
 * A scripted corpus for the flow's routing call (intent-router.ts): a few realistic flows and, for each of many
 * caller utterances, the edge a model that understood the labels should choose and the values it should capture.
 * Read by routing-corpus.spec.ts (the mechanics, with a fake model that answers what is expected, in varied
 * shapes) and by routing-corpus.live.ts (`npm run check:routing`: a real model's hit rate).
 */

/**
 * An expected capture value: a number, boolean or text as the JSON type of its capture; or, for text a model may
 * word several ways (a date), a pattern and an example answer (what the fake model says).
 */
export type ExpectedValue = string | number | boolean | { like: RegExp; say: string };

/** What makes an utterance hard, for counting and for the live check's report. */
export type Difficulty =
  /** The caller's words meet no transition: the flow must stay. */
  | 'no-edge'
  /** Two transitions plausibly apply; the lower priority (listed first) must win. */
  | 'priority'
  /** A capture value was given in an earlier turn, not in the last words. */
  | 'earlier-value'
  /** The right transition, but a value it needs was never given: it must not fire. */
  | 'missing'
  /** A number said in words (the model must give it as a number). */
  | 'number-words'
  /** A yes/no answer captured as a boolean. */
  | 'boolean';

export interface RoutingCase {
  /** Unique, short: names the test and the live check's misses. */
  id: string;
  /** The flow (a key of ROUTING_FLOWS). */
  flow: keyof typeof ROUTING_FLOWS;
  /** The node the call is on; it has intent edges. */
  node: string;
  /** The conversation before the caller's last words, oldest first (on this node or earlier). */
  before?: ChatMessage[];
  /** The caller's last words. */
  said: string;
  /** The intent edge that should be chosen (by its `to`), or null: none applies and the flow stays. */
  to: string | null;
  /** The values the chosen edge captures, by name, typed as its `capture` declares. */
  captured?: Record<string, ExpectedValue>;
  /** Values the chosen edge asks for that the caller never gave: the edge is chosen but must not fire. */
  missing?: string[];
  /** For `priority`: the other transitions that plausibly apply too (each listed after `to`). */
  also?: string[];
  hard?: Difficulty[];
}

const agent = (role: 'user' | 'assistant', content: string): ChatMessage => ({ role, content });
const caller = (content: string) => agent('user', content);
const said = (content: string) => agent('assistant', content);

/**
 * The flows. Edge order and priorities are deliberately not the same where priority decides: the router is told
 * the transitions lowest priority first, and the edge chosen is found back by its position in `edges`.
 */
export const ROUTING_FLOWS = {
  /** Outbound lead qualification for a solar installer: name, then budget and email. */
  qualification: {
    start: 'intro',
    nodes: [
      {
        id: 'intro',
        description: "Introduce yourself as Sunny Roofs' assistant, ask who you are speaking with and whether they want a quote for solar panels.",
        edges: [
          { to: 'qualify', when: 'the caller is interested in a quote', priority: 2, capture: { name: 'string' } },
          { to: 'not_interested', when: 'the caller is not interested or asks to be taken off the list', priority: 0 },
          { to: 'callback', when: 'the caller asks to be called back another time', priority: 1 },
        ],
      },
      {
        id: 'qualify',
        description: 'Ask roughly how much the caller wants to spend and the email address to send the quote to.',
        edges: [
          { to: 'not_interested', when: 'the caller no longer wants to go ahead', priority: 0 },
          { to: 'book_visit', when: 'the caller has given a budget and an email address', priority: 1, capture: { budget: 'number', email: 'string' } },
        ],
      },
      { id: 'book_visit', description: 'Offer a site visit for a precise quote.' },
      { id: 'callback', type: 'static', say: 'No problem, we will call you back. Goodbye.' },
      { id: 'not_interested', type: 'static', say: 'Understood, we will not call again. Goodbye.' },
    ],
  },
  /** A restaurant's bookings: the date and the party size; large parties go to the events team. */
  booking: {
    start: 'ask_booking',
    nodes: [
      {
        id: 'ask_booking',
        description: 'Take a table booking at Luigi\u2019s: ask for the date and how many people.',
        edges: [
          { to: 'confirm_booking', when: 'the caller has given the date and the number of people for a booking', priority: 1, capture: { date: 'string', party_size: 'integer' } },
          { to: 'opening_hours', when: 'the caller asks about opening hours, the address or parking', priority: 1 },
          { to: 'large_party', when: 'the booking is for more than eight people', priority: 0, capture: { party_size: 'integer' } },
        ],
      },
      { id: 'confirm_booking', description: 'Read the booking back and ask the caller to confirm.' },
      { id: 'opening_hours', description: 'Answer about opening hours (12-11 pm daily), the address (4 Market Street) and parking.' },
      { id: 'large_party', type: 'static', say: 'For groups that size our events team will call you back today.' },
    ],
  },
  /** Support triage with the deployment's own routing instructions. */
  support: {
    start: 'triage',
    routing: {
      instructions:
        'You route calls to the support line of Brightwave, an internet provider. Pick the numbered transition that matches what the caller needs now; prefer the lowest number when several match; pick none when it is not yet clear what they need.',
    },
    nodes: [
      {
        id: 'triage',
        description: 'Ask the caller what they need help with today.',
        edges: [
          { to: 'billing', when: 'the caller has a question about a charge, an invoice, a payment or a refund', priority: 2 },
          { to: 'technical', when: 'the caller has a technical problem: no connection, an error, cannot log in, a device not working', priority: 2 },
          { to: 'cancel', when: 'the caller wants to cancel their service or close their account', priority: 1 },
          { to: 'person', when: 'the caller asks to speak to a person, a human, an agent or an operator', priority: 0 },
        ],
      },
      { id: 'billing', description: 'Help with charges, invoices and refunds.' },
      { id: 'technical', description: 'Troubleshoot the connection and devices.' },
      { id: 'cancel', description: 'Handle a cancellation: ask why, offer to keep the service.' },
      { id: 'person', type: 'static', say: 'Let me put you through to a colleague.' },
    ],
  },
  /** Confirming an appointment: a yes/no answer captured as a boolean; a router node acts on it. */
  confirmation: {
    start: 'confirm',
    variables: { confirmed: 'boolean' },
    nodes: [
      {
        id: 'confirm',
        description: 'Read back the appointment (a home cleaning on Tuesday at 10 am at 12 Elm Road) and ask whether it is right.',
        edges: [
          { to: 'answered', when: 'the caller says whether the details are right, yes or no', priority: 1, capture: { confirmed: 'boolean' } },
          { to: 'person', when: 'the caller asks to speak to a person', priority: 0 },
        ],
      },
      {
        id: 'answered',
        type: 'router',
        edges: [
          { to: 'booked', type: 'expression', expression: { conditions: [{ variable: 'confirmed', operator: 'eq', value: true }] } },
          { to: 'fix', type: 'always' },
        ],
      },
      { id: 'booked', type: 'static', say: 'Great, see you on Tuesday.' },
      { id: 'fix', description: 'Ask what should change.' },
      { id: 'person', type: 'static', say: 'Let me put you through to a colleague.' },
    ],
  },
} satisfies Record<string, AgentFlow>;

const askName = said("Hi, this is the assistant at Sunny Roofs. Who am I speaking with, and would you like a quote for solar panels?");
const askBudget = said('Great. Roughly how much would you like to spend, and what email should I send the quote to?');
const askBooking = said('Luigi\u2019s, good evening! For which day would you like a table, and for how many?');
const askTriage = said('Thanks for calling Brightwave support. What can I help you with today?');
const readBack = said('I have a home cleaning on Tuesday at 10 am at 12 Elm Road. Is that right?');

export const ROUTING_CORPUS: RoutingCase[] = [
  // ---- qualification: intro (name) ----------------------------------------------------------------------------
  { id: 'intro-name-and-quote', flow: 'qualification', node: 'intro', before: [askName], said: 'Hi, this is Maria Lopez. I saw your ad and I would like a quote.', to: 'qualify', captured: { name: 'Maria Lopez' } },
  { id: 'intro-name-repeated', flow: 'qualification', node: 'intro', before: [askName], said: "Yeah it's Tom. Tom Becker. How much would it cost for a three bedroom house?", to: 'qualify', captured: { name: 'Tom Becker' } },
  { id: 'intro-name-earlier', flow: 'qualification', node: 'intro', before: [askName, caller('Priya. Priya Nair.'), said('Nice to meet you, Priya. Would you like a quote?')], said: 'Sure, why not.', to: 'qualify', captured: { name: 'Priya Nair' }, hard: ['earlier-value'] },
  { id: 'intro-quote-no-name', flow: 'qualification', node: 'intro', before: [askName], said: 'Yes please, I want a quote for my roof.', to: 'qualify', missing: ['name'], hard: ['missing'] },
  { id: 'intro-remove-me', flow: 'qualification', node: 'intro', before: [askName], said: 'Please take me off your list, I am not interested.', to: 'not_interested' },
  { id: 'intro-call-later', flow: 'qualification', node: 'intro', before: [askName], said: "I'm at work right now, could you try me tomorrow afternoon?", to: 'callback' },
  { id: 'intro-interested-but-driving', flow: 'qualification', node: 'intro', before: [askName], said: "This is Dev Patel, I'm interested, but I'm driving. Can you call me back later?", to: 'callback', also: ['qualify'], hard: ['priority'] },
  { id: 'intro-name-then-refuses', flow: 'qualification', node: 'intro', before: [askName], said: "It's Ana, and no, I'm not interested, stop calling me.", to: 'not_interested', hard: ['priority'] },
  { id: 'intro-who-is-this', flow: 'qualification', node: 'intro', before: [askName], said: 'Who is this? How did you get my number?', to: null, hard: ['no-edge'] },
  { id: 'intro-cannot-hear', flow: 'qualification', node: 'intro', before: [askName], said: "Hello? Hello? Sorry, I can't hear you very well.", to: null, hard: ['no-edge'] },

  // ---- qualification: budget (number) and email ---------------------------------------------------------------
  { id: 'budget-words-and-spelled-email', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'Around fifteen thousand dollars. My email is maria dot lopez at gmail dot com.', to: 'book_visit', captured: { budget: 15000, email: 'maria.lopez@gmail.com' }, hard: ['number-words'] },
  { id: 'budget-digits', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'Budget is 8000. Email tom@beckerhome.net.', to: 'book_visit', captured: { budget: 8000, email: 'tom@beckerhome.net' } },
  { id: 'budget-separator', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'My budget is 5,000 and my email is jo@example.org.', to: 'book_visit', captured: { budget: 5000, email: 'jo@example.org' } },
  { id: 'budget-grand-earlier', flow: 'qualification', node: 'qualify', before: [askBudget, caller('Maybe twelve grand?'), said('Twelve thousand, got it. And your email?')], said: "It's sam.ortiz@outlook.com.", to: 'book_visit', captured: { budget: 12000, email: 'sam.ortiz@outlook.com' }, hard: ['earlier-value', 'number-words'] },
  { id: 'budget-k-email-first', flow: 'qualification', node: 'qualify', before: [askBudget], said: "Email's priya.n@fastmail.com and budget, I'd say thirty K.", to: 'book_visit', captured: { budget: 30000, email: 'priya.n@fastmail.com' }, hard: ['number-words'] },
  { id: 'budget-hundred-and-twenty', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'One hundred and twenty thousand. Email rick@ranch.com.', to: 'book_visit', captured: { budget: 120000, email: 'rick@ranch.com' }, hard: ['number-words'] },
  { id: 'budget-without-email', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'We could spend about twenty-five thousand.', to: 'book_visit', captured: { budget: 25000 }, missing: ['email'], hard: ['missing', 'number-words'] },
  { id: 'email-without-budget', flow: 'qualification', node: 'qualify', before: [askBudget], said: 'You can send it to ana@example.com.', to: 'book_visit', captured: { email: 'ana@example.com' }, missing: ['budget'], hard: ['missing'] },
  { id: 'budget-changed-mind', flow: 'qualification', node: 'qualify', before: [askBudget], said: "Actually, I've changed my mind. I don't want to go ahead.", to: 'not_interested' },
  { id: 'budget-asks-price', flow: 'qualification', node: 'qualify', before: [askBudget], said: "I don't really know yet. What does it usually cost?", to: null, hard: ['no-edge'] },

  // ---- booking: date and party size (integer) ------------------------------------------------------------------
  { id: 'booking-four-saturday', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'A table for four this Saturday, please.', to: 'confirm_booking', captured: { date: { like: /saturday/i, say: 'this Saturday' }, party_size: 4 }, hard: ['number-words'] },
  { id: 'booking-two-march', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'Can I book for 2 people on March 14th?', to: 'confirm_booking', captured: { date: { like: /14|fourteenth/i, say: 'March 14' }, party_size: 2 } },
  { id: 'booking-six-twentieth', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'Six people, on the twentieth.', to: 'confirm_booking', captured: { date: { like: /20|twentieth/i, say: 'the 20th' }, party_size: 6 }, hard: ['number-words'] },
  { id: 'booking-three-new-years-eve', flow: 'booking', node: 'ask_booking', before: [askBooking], said: "For 3 on New Year's Eve.", to: 'confirm_booking', captured: { date: { like: /new year|12-31|31/i, say: "New Year's Eve" }, party_size: 3 } },
  { id: 'booking-me-and-my-wife', flow: 'booking', node: 'ask_booking', before: [askBooking, caller('I was hoping to come on Friday the 3rd.'), said('Lovely, Friday the 3rd. How many people?')], said: 'Just me and my wife.', to: 'confirm_booking', captured: { date: { like: /3|third|friday/i, say: 'Friday the 3rd' }, party_size: 2 }, hard: ['earlier-value', 'number-words'] },
  { id: 'booking-no-size', flow: 'booking', node: 'ask_booking', before: [askBooking], said: "I'd like to book a table for tomorrow night.", to: 'confirm_booking', captured: { date: { like: /tomorrow/i, say: 'tomorrow night' } }, missing: ['party_size'], hard: ['missing'] },
  { id: 'booking-no-date', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'A party of five.', to: 'confirm_booking', captured: { party_size: 5 }, missing: ['date'], hard: ['missing', 'number-words'] },
  { id: 'booking-twelve-birthday', flow: 'booking', node: 'ask_booking', before: [askBooking], said: "There'll be twelve of us on Friday, it's a birthday.", to: 'large_party', captured: { party_size: 12 }, also: ['confirm_booking'], hard: ['priority', 'number-words'] },
  { id: 'booking-group-fifteen', flow: 'booking', node: 'ask_booking', before: [askBooking], said: "We're a group of 15, next Thursday.", to: 'large_party', captured: { party_size: 15 }, also: ['confirm_booking'], hard: ['priority'] },
  { id: 'booking-around-ten', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'How many can you seat? We might be around ten on Saturday.', to: 'large_party', captured: { party_size: 10 }, also: ['confirm_booking'], hard: ['priority', 'number-words'] },
  { id: 'booking-opening-hours', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'What time do you open on Sundays?', to: 'opening_hours' },
  { id: 'booking-parking', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'Where are you exactly, and is there parking nearby?', to: 'opening_hours' },
  { id: 'booking-ask-friends', flow: 'booking', node: 'ask_booking', before: [askBooking], said: 'Hmm, let me ask my friends first.', to: null, hard: ['no-edge'] },

  // ---- support triage (the flow's own routing instructions) ------------------------------------------------------
  { id: 'support-double-charge', flow: 'support', node: 'triage', before: [askTriage], said: 'I was charged twice this month.', to: 'billing' },
  { id: 'support-refund', flow: 'support', node: 'triage', before: [askTriage], said: "Where's my refund? It's been two weeks.", to: 'billing' },
  { id: 'support-payment-failed', flow: 'support', node: 'triage', before: [askTriage], said: 'I got an email saying my payment failed.', to: 'billing' },
  { id: 'support-no-internet', flow: 'support', node: 'triage', before: [askTriage], said: 'My internet has been down since this morning.', to: 'technical' },
  { id: 'support-cannot-log-in', flow: 'support', node: 'triage', before: [askTriage], said: "I can't log in, it keeps saying my password is wrong.", to: 'technical' },
  { id: 'support-router-lights', flow: 'support', node: 'triage', before: [askTriage], said: 'The lights on my router are blinking red.', to: 'technical' },
  { id: 'support-cancel', flow: 'support', node: 'triage', before: [askTriage], said: 'I want to cancel my subscription.', to: 'cancel' },
  { id: 'support-close-account', flow: 'support', node: 'triage', before: [askTriage], said: "I'm moving abroad, so please close my account.", to: 'cancel' },
  { id: 'support-cancel-over-charge', flow: 'support', node: 'triage', before: [askTriage], said: 'You charged me twice again, I want to cancel!', to: 'cancel', also: ['billing'], hard: ['priority'] },
  { id: 'support-person-over-bill', flow: 'support', node: 'triage', before: [askTriage], said: 'Get me a real person, my bill is wrong.', to: 'person', also: ['billing'], hard: ['priority'] },
  { id: 'support-human', flow: 'support', node: 'triage', before: [askTriage], said: 'Can I just talk to a human, please?', to: 'person' },
  { id: 'support-operator', flow: 'support', node: 'triage', before: [askTriage], said: 'Operator. Operator!', to: 'person' },
  { id: 'support-hello', flow: 'support', node: 'triage', before: [askTriage], said: 'Hi, um, yes, hello?', to: null, hard: ['no-edge'] },
  { id: 'support-vague', flow: 'support', node: 'triage', before: [askTriage], said: 'I have a question about my account.', to: null, hard: ['no-edge'] },
  { id: 'support-weather', flow: 'support', node: 'triage', before: [askTriage], said: "What's the weather like over there?", to: null, hard: ['no-edge'] },

  // ---- confirmation: yes / no as a boolean ------------------------------------------------------------------------
  { id: 'confirm-yes-right', flow: 'confirmation', node: 'confirm', before: [readBack], said: "Yes, that's right.", to: 'answered', captured: { confirmed: true }, hard: ['boolean'] },
  { id: 'confirm-yep', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Yep.', to: 'answered', captured: { confirmed: true }, hard: ['boolean'] },
  { id: 'confirm-correct', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Correct.', to: 'answered', captured: { confirmed: true }, hard: ['boolean'] },
  { id: 'confirm-sounds-good', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Uh-huh, sounds good.', to: 'answered', captured: { confirmed: true }, hard: ['boolean'] },
  { id: 'confirm-that-works', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'That works for me, thanks.', to: 'answered', captured: { confirmed: true }, hard: ['boolean'] },
  { id: 'confirm-no-wrong-day', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'No, wrong day.', to: 'answered', captured: { confirmed: false }, hard: ['boolean'] },
  { id: 'confirm-nope', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Nope.', to: 'answered', captured: { confirmed: false }, hard: ['boolean'] },
  { id: 'confirm-should-be-wednesday', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Actually it should be Wednesday.', to: 'answered', captured: { confirmed: false }, hard: ['boolean'] },
  { id: 'confirm-address-wrong', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Not quite, the address is wrong.', to: 'answered', captured: { confirmed: false }, hard: ['boolean'] },
  { id: 'confirm-no-person', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'No, no. Can I talk to someone?', to: 'person', also: ['answered'], hard: ['priority'] },
  { id: 'confirm-what-time', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Sorry, what time did you say?', to: null, hard: ['no-edge'] },
  { id: 'confirm-check-calendar', flow: 'confirmation', node: 'confirm', before: [readBack], said: 'Hold on, let me check my calendar.', to: null, hard: ['no-edge'] },
];

/** The conversation the router reads for a case: what came before, then the caller's last words. */
export function historyOf(c: RoutingCase): ChatMessage[] {
  return [...(c.before ?? []), caller(c.said)];
}

/** The value a model answers for an expected one (the example of a pattern). */
export function answerOf(value: ExpectedValue): string | number | boolean {
  return typeof value === 'object' ? value.say : value;
}

/**
 * Whether a captured value is the expected one: numbers and booleans exactly (and of that type); text ignoring
 * case, spaces and punctuation other than `@` and `.`, the expected text contained in the captured one (a model may
 * say "Maria Lopez" or "Ms Maria Lopez"); a pattern by its test.
 */
export function valueMatches(expected: ExpectedValue, actual: unknown): boolean {
  if (typeof expected === 'object') return typeof actual === 'string' && expected.like.test(actual);
  if (typeof expected !== 'string') return actual === expected;
  const norm = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}@.]+/gu, '');
  return typeof actual === 'string' && norm(actual).includes(norm(expected));
}
