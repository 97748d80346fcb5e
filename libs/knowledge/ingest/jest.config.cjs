module.exports = {
  displayName: 'knowledge-ingest',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
