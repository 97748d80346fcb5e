import { extractDocument } from './extract';
import { IngestError } from './ingest-error';
import { buildDocx, buildPdf } from './testing-fixtures';

const limits = { maxCharacters: 100_000 };

async function failure(promise: Promise<unknown>): Promise<IngestError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(IngestError);
  return error as IngestError;
}

describe('extractDocument', () => {
  it('starts a section at each markdown heading, keeping the path of headings above it', async () => {
    const doc = await extractDocument(
      {
        kind: 'text',
        contentType: 'text/markdown',
        text: [
          'Welcome to **Acme**.',
          '',
          '# Returns',
          'You can return items within 30 days.',
          '',
          '## Refunds',
          'Refunds go back to the [original card](https://example.com/cards).',
          '',
          '```',
          '# not a heading',
          '```',
          '',
          '## Exchanges',
          'Exchanges are free.',
          '',
          'Shipping',
          '========',
          'We ship worldwide.',
        ].join('\n'),
      },
      limits,
    );
    expect(doc.title).toBe('Returns');
    expect(doc.sections).toEqual([
      { headings: [], text: 'Welcome to Acme.' },
      { headings: ['Returns'], text: 'You can return items within 30 days.' },
      { headings: ['Returns', 'Refunds'], text: 'Refunds go back to the original card.\n\n# not a heading' },
      { headings: ['Returns', 'Exchanges'], text: 'Exchanges are free.' },
      { headings: ['Shipping'], text: 'We ship worldwide.' },
    ]);
    expect(doc.characters).toBe(doc.sections.reduce((n, s) => n + s.text.length, 0));
  });

  it('reads plain text as one section of paragraphs split on blank lines', async () => {
    const doc = await extractDocument(
      { kind: 'text', contentType: 'text/plain', text: '# Not a heading here\r\nline two\r\n\r\n\r\n\r\nSecond paragraph.  \n' },
      limits,
    );
    expect(doc.title).toBeUndefined();
    expect(doc.sections).toEqual([{ headings: [], text: '# Not a heading here\nline two\n\nSecond paragraph.' }]);
  });

  it('renders each CSV row as "header: value" pairs, quoted commas, quotes and line breaks included', async () => {
    const csv = 'name,price,notes\r\nBasic plan,10,"Monthly, no contract"\r\n"Pro ""plus""",25,"Two\nlines"\r\n\r\nEnterprise,,Call us\r\n';
    const doc = await extractDocument({ kind: 'file', contentType: 'text/csv; charset=utf-8', data: Buffer.from(csv) }, limits);
    expect(doc.sections).toEqual([
      {
        headings: [],
        text: [
          'name: Basic plan; price: 10; notes: Monthly, no contract',
          'name: Pro "plus"; price: 25; notes: Two lines',
          'name: Enterprise; notes: Call us',
        ].join('\n\n'),
      },
    ]);
  });

  it('reads a CSV exported with semicolons or tabs', async () => {
    const semicolons = await extractDocument({ kind: 'text', contentType: 'text/csv', text: 'city;hours\nParis;"9-17; Sat 10-12"\n' }, limits);
    expect(semicolons.sections[0].text).toBe('city: Paris; hours: 9-17; Sat 10-12');
    const tabs = await extractDocument({ kind: 'text', contentType: 'text/csv', text: 'city\thours\nOslo\t8-16\n' }, limits);
    expect(tabs.sections[0].text).toBe('city: Oslo; hours: 8-16');
  });

  it('refuses a CSV with an unclosed quote as malformed', async () => {
    const error = await failure(extractDocument({ kind: 'text', contentType: 'text/csv', text: 'a,b\n"open,1\n' }, limits));
    expect(error.code).toBe('malformed');
    expect(error.message).toMatch(/line 2.*never closed/);
  });

  it('reduces an HTML page with navigation and footer to its article, headings, lists and tables kept', async () => {
    const filler = 'Our support team answers every question about orders, deliveries and returns. '.repeat(4);
    const html = `<!DOCTYPE html><html><head><title>Help centre | Acme</title></head><body>
      <nav><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop</a></li><li><a href="/cart">Cart</a></li></ul></nav>
      <header class="site-header"><a href="/">Acme</a> <form><input name="q"><button>Search</button></form></header>
      <main><article>
        <h1>Delivery and returns</h1>
        <p>${filler}</p>
        <h2>Delivery times</h2>
        <p>Orders placed before noon ship the same day. ${filler}</p>
        <ul><li>Standard: 3 to 5 days</li><li>Express: next day</li></ul>
        <h2>Return fees</h2>
        <p>Returns are free within 30 days of delivery. ${filler}</p>
        <table><tr><th>Region</th><th>Fee</th></tr><tr><td>EU</td><td>free</td></tr><tr><td>US</td><td>$5</td></tr></table>
      </article></main>
      <footer><p>© 2026 Acme Inc. All rights reserved. Privacy policy. Terms of use. Cookie settings.</p></footer>
      <script>trackPageView()</script>
    </body></html>`;
    const doc = await extractDocument({ kind: 'html', html, url: 'https://acme.example/help' }, limits);
    expect(doc.title).toMatch(/Delivery and returns|Help centre/);
    const all = doc.sections.map((s) => s.text).join('\n');
    expect(all).not.toMatch(/Home|Cart|All rights reserved|trackPageView|Search/);
    // The page's h1 stays the top of the heading path (Readability demotes h1 to h2 in the article).
    expect(doc.sections.map((s) => s.headings)).toEqual([
      ['Delivery and returns'],
      ['Delivery and returns', 'Delivery times'],
      ['Delivery and returns', 'Return fees'],
    ]);
    const delivery = doc.sections.find((s) => s.headings[s.headings.length - 1] === 'Delivery times');
    expect(delivery?.text).toContain('Orders placed before noon ship the same day.');
    expect(delivery?.text).toContain('- Standard: 3 to 5 days\n- Express: next day');
    const fees = doc.sections.find((s) => s.headings[s.headings.length - 1] === 'Return fees');
    expect(fees?.text).toContain('Region | Fee\nEU | free\nUS | $5');
  });

  it('reads the body when Readability finds no article, without navigation or footer', async () => {
    const html = '<html><head><title>Tiny</title></head><body><nav>Menu</nav><p>Open 9 to 5.</p><footer>Legal</footer></body></html>';
    const doc = await extractDocument({ kind: 'html', html }, limits);
    expect(doc.sections.map((s) => s.text).join('\n')).toContain('Open 9 to 5.');
    expect(doc.sections.map((s) => s.text).join('\n')).not.toMatch(/Menu|Legal/);
  });

  it('reads an HTML file by its content type and charset', async () => {
    const html = '<html><head><title>Caf\u00e9</title></head><body><h2>Menu</h2><p>Cr\u00e8me br\u00fbl\u00e9e is served all day.</p></body></html>';
    const doc = await extractDocument({ kind: 'file', contentType: 'text/html; charset=iso-8859-1', data: Buffer.from(html, 'latin1') }, limits);
    expect(doc.sections.map((s) => s.text).join('\n')).toContain('Cr\u00e8me br\u00fbl\u00e9e is served all day.');
  });

  it('reads a PDF page by page, with the title from its metadata', async () => {
    const data = await buildPdf(
      [
        ['Refund policy', 'Refunds are issued within 14 days.'],
        ['Exceptions', 'Gift cards cannot be refunded.'],
      ],
      'Acme refund policy',
    );
    const doc = await extractDocument({ kind: 'file', contentType: 'application/pdf', data }, limits);
    expect(doc.title).toBe('Acme refund policy');
    expect(doc.sections).toEqual([
      { headings: ['Page 1'], text: 'Refund policy\nRefunds are issued within 14 days.' },
      { headings: ['Page 2'], text: 'Exceptions\nGift cards cannot be refunded.' },
    ]);
  });

  it('titles a PDF without metadata by its first line', async () => {
    const data = await buildPdf([['Opening hours', 'Monday to Friday.']]);
    const doc = await extractDocument({ kind: 'file', contentType: 'application/pdf', data }, limits);
    expect(doc.title).toBe('Opening hours');
  });

  it('fails a corrupt PDF as malformed, with the reason', async () => {
    const good = await buildPdf([['Some text']]);
    const corrupt = Buffer.concat([good.subarray(0, 20), Buffer.from('garbage '.repeat(40))]);
    const error = await failure(extractDocument({ kind: 'file', contentType: 'application/pdf', data: corrupt }, limits));
    expect(error.code).toBe('malformed');
    expect(error.message).toBe('the PDF could not be read: Invalid PDF structure.');
  });

  it('reads a DOCX with its headings as sections', async () => {
    const data = await buildDocx([
      ['Heading1', 'Employee handbook'],
      'Welcome to the team.',
      ['Heading2', 'Holidays'],
      'Everyone gets 25 days of paid holiday.',
      'Public holidays come on top.',
      ['Heading2', 'Sick leave'],
      'Tell your manager before 10 am.',
    ]);
    const doc = await extractDocument(
      { kind: 'file', contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', data },
      limits,
    );
    expect(doc.title).toBe('Employee handbook');
    expect(doc.sections).toEqual([
      { headings: ['Employee handbook'], text: 'Welcome to the team.' },
      {
        headings: ['Employee handbook', 'Holidays'],
        text: 'Everyone gets 25 days of paid holiday.\n\nPublic holidays come on top.',
      },
      { headings: ['Employee handbook', 'Sick leave'], text: 'Tell your manager before 10 am.' },
    ]);
  });

  it('fails a corrupt DOCX as malformed', async () => {
    const error = await failure(
      extractDocument(
        {
          kind: 'file',
          contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
          data: Buffer.from('PK not really a zip file'),
        },
        limits,
      ),
    );
    expect(error.code).toBe('malformed');
    expect(error.message).toBe('the DOCX could not be read: it is not a valid DOCX (ZIP) file');
  });

  it('refuses more text than the limit as too_large, with the count and the limit', async () => {
    const error = await failure(extractDocument({ kind: 'text', text: 'word '.repeat(3000) }, { maxCharacters: 10_000 }));
    expect(error.code).toBe('too_large');
    expect(error.message).toBe('the document has 14,999 characters of text, more than the limit of 10,000');
  });

  it('refuses a document without text as empty', async () => {
    expect((await failure(extractDocument({ kind: 'text', text: ' \n\n\t ' }, limits))).code).toBe('empty');
    expect((await failure(extractDocument({ kind: 'html', html: '<html><body><script>x()</script></body></html>' }, limits))).code).toBe('empty');
    const blankPdf = await buildPdf([[]]);
    const error = await failure(extractDocument({ kind: 'file', contentType: 'application/pdf', data: blankPdf }, limits));
    expect(error).toMatchObject({ code: 'empty', message: expect.stringMatching(/scanned/) });
  });

  it('refuses an unknown content type, naming the supported ones', async () => {
    const error = await failure(extractDocument({ kind: 'file', contentType: 'image/png', data: Buffer.from([0x89]) }, limits));
    expect(error.code).toBe('unsupported_type');
    expect(error.message).toBe(
      '"image/png" is not a supported document type; supported: application/pdf, ' +
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document, text/plain, text/markdown, text/csv, text/html',
    );
  });
});
