// DOM helpers: h() builds elements, table() a keyboard-navigable table.

// h('a', {href: '/x', class: 'c'}, 'text', child, null) → element.
// Attributes with value undefined are skipped; children may be null.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c);
  return el;
}

// A table whose columns are [{key, label, num, render(row)}]; the column
// headers are buttons that sort it; rows can be focused and moved through with
// the arrow keys, and Enter/click calls onPick(row). sort = {key, desc}.
// limit: rows shown (a note says how many more exist).
export function table({ columns, rows, sort, onSort, onPick, selectedKey, rowKey, limit = Infinity, caption }) {
  const col = columns.find((c) => c.key === sort?.key);
  const sorted = col ? [...rows].sort((a, b) => {
    const x = a[col.key];
    const y = b[col.key];
    const r = col.num ? x - y : String(x).localeCompare(String(y));
    return sort.desc ? -r : r;
  }) : rows;
  const head = h('tr', {}, ...columns.map((c) => {
    const th = h('th', { scope: 'col', class: c.num ? 'num' : undefined,
      'aria-sort': c.key === sort?.key ? (sort.desc ? 'descending' : 'ascending') : undefined });
    if (onSort) {
      const b = h('button', { type: 'button', 'data-sort': c.key }, c.label);
      b.addEventListener('click', () => onSort({ key: c.key, desc: c.key === sort?.key ? !sort.desc : !!c.num }));
      th.append(b);
    } else th.append(c.label);
    return th;
  }));
  const body = h('tbody');
  const shown = sorted.slice(0, limit);
  if (selectedKey !== undefined && limit < sorted.length && !shown.some((r) => rowKey(r) === selectedKey)) {
    const sel = sorted.find((r) => rowKey(r) === selectedKey);
    if (sel) shown.push(sel);
  }
  for (const r of shown) {
    const tr = h('tr', onPick ? { tabindex: '0' } : {}, ...columns.map((c) => h('td', { class: c.num ? 'num' : undefined }, c.render ? c.render(r) : String(r[c.key]))));
    if (rowKey && rowKey(r) === selectedKey) tr.setAttribute('aria-selected', 'true');
    if (onPick) {
      tr.addEventListener('click', () => onPick(r));
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') onPick(r);
        else if (e.key === 'ArrowDown') tr.nextElementSibling?.focus();
        else if (e.key === 'ArrowUp') tr.previousElementSibling?.focus();
        else return;
        e.preventDefault();
      });
    }
    body.append(tr);
  }
  const t = h('table', { class: 'data' }, caption ? h('caption', {}, caption) : null, h('thead', {}, head), body);
  const more = sorted.length - shown.length;
  return more > 0 ? h('div', {}, t, h('p', { class: 'muted' }, `${more} more rows not shown.`)) : t;
}

// A <pre> with a button that copies its text.
export function copyBlock(text, label) {
  const pre = h('pre', {}, h('code', {}, text));
  const b = h('button', { type: 'button', class: 'copy', 'aria-label': `Copy ${label}` }, 'Copy');
  b.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(text); b.textContent = 'Copied'; } catch { b.textContent = 'Select and copy'; }
  });
  return h('div', { class: 'copyblock' }, b, pre);
}
