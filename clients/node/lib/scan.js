'use strict';
// The iterator over an item's records: SECKILL.SCAN from cursor '0', one
// call a page, following the cursor each reply gives until it is '0'.
// Every record there when the scan starts comes once, however the item
// changes meanwhile; records written during the scan come at its end.

const { buildScan, checkOptions, SCAN_OPTIONS } = require('./commands');

/**
 * @param {(key: any, cursor: string, options: object) => Promise<{cursor: string, records: any[]}>} scan
 *   one page: the client's scan command
 * @param key the item key
 * @param {{count?: number|bigint|string, variant?: string|Buffer|number}} [options] count: records a call
 *   (10 by default, 10,000 at most); variant: the variant whose records to walk (required on an item with variants)
 */
function scanIterator(scan, key, options) {
  const o = checkOptions(options, SCAN_OPTIONS, 'scanIterator');
  buildScan(key, '0', o); // wrong arguments throw here, not at the first next()
  return (async function* records() {
    let cursor = '0';
    do {
      const page = await scan(key, cursor, o);
      cursor = page.cursor;
      yield* page.records;
    } while (cursor !== '0');
  })();
}

module.exports = { scanIterator };
