/** The `node` devDependency must put Node ≥ 22.17 first on PATH for every npm script (MikroORM 7 needs it). */
test('runs on Node 22.17 or later', () => {
  const [major, minor] = process.versions.node.split('.').map(Number);
  expect(major > 22 || (major === 22 && minor >= 17)).toBe(true);
});
