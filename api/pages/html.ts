/** Text as HTML text or an attribute value: every character that could open markup or close a quote, escaped. */
export const escapeHtml = (text: unknown) =>
  String(text ?? '').replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
