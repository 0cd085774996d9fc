/** Names in a message: all of them up to `max`, then how many more. */
export function listOf(names: readonly string[], max = 10): string {
  return names.length <= max
    ? names.join(', ')
    : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}
