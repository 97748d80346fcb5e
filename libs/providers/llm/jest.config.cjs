module.exports = {
  displayName: 'llm',
  preset: '../../../jest.preset.js',
  rootDir: __dirname,
};
