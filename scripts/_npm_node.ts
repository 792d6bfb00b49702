// Placeholder until the Node entries land (issue 38): builds no Node entries yet.
export function buildNodeEntries(
  _outDir: string,
): Promise<Record<string, { types: string; import: string }>> {
  return Promise.resolve({});
}
export function nodeDependencies(): Promise<Record<string, string>> {
  return Promise.resolve({ postgres: '3.4.9' });
}
