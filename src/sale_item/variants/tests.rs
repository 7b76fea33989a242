//! Variants judged across each other: one limit over all of them, a
//! request id in one of them, and the whole item saved and loaded.

use super::*;
use crate::sale_item::change::Order;
use crate::sale_item::codec::WholeLoad;
use crate::sale_item::{Change, Deduction, ImportError, ImportRecord, Verdict};
use proptest::prelude::*;

const NOW: i64 = 1_000_000;

fn drop_of(stocks: &[i64], limit: i64) -> SaleItem {
    let names: Vec<String> = (0..stocks.len()).map(|n| format!("{}", 40 + n)).collect();
    let specs: Vec<VariantSpec> = names
        .iter()
        .zip(stocks)
        .map(|(name, stock)| VariantSpec {
            name: name.as_bytes(),
            stock: Stock::Limited(*stock),
            limit: 0,
        })
        .collect();
    SaleItem::with_variants(&specs, limit).unwrap()
}

/// A DEDUCT of variant `index` judged across variants and applied, as the
/// module does in two steps.
fn buy(
    item: &mut SaleItem,
    index: usize,
    user: &str,
    request: Option<&str>,
    hold_until: Option<i64>,
    now: i64,
) -> Result<Deduction, ItemError> {
    let order = Order {
        user: user.as_bytes(),
        qty: 1,
        request_id: request.map(str::as_bytes),
        hold_until,
    };
    let moment = Moment::Now(now);
    let verdict = item
        .judge_variant_deduct(index, order, moment)
        .expect("a variant")?;
    Ok(match verdict {
        Verdict::Answer(deduction) => deduction,
        Verdict::Change(change) => {
            let part = item.variant_mut(index).unwrap();
            let plan = part.settle_plan(&change, now, 0);
            let remaining = part.apply(&plan, change);
            Deduction::Bought { remaining }
        }
    })
}

fn save_and_load(item: &SaleItem) -> Result<SaleItem, DecodeError> {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    load(&chunks)
}

fn load(chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
    let (first, rest) = chunks.split_first().ok_or(DecodeError("empty"))?;
    let mut load = WholeLoad::begin(first)?;
    let mut rest = rest.iter();
    while !load.is_complete() {
        load.add_chunk(rest.next().ok_or(DecodeError("short"))?)?;
    }
    if rest.next().is_some() {
        return Err(DecodeError("chunks left over"));
    }
    load.finish()
}

/// The same chunks through SECKILL.LOADCHUNK's path, one at a time.
fn load_chunk_by_chunk(chunks: &[Vec<u8>]) -> Result<SaleItem, DecodeError> {
    let (first, rest) = chunks.split_first().ok_or(DecodeError("empty"))?;
    let mut item = SaleItem::begin_variants_load(VariantsHeader::decode(first)?);
    for chunk in rest {
        item.load_next_chunk(chunk)?;
    }
    if item.is_partly_loaded() {
        return Err(DecodeError("partly loaded"));
    }
    Ok(item)
}

use crate::sale_item::codec::{DecodeError, VariantsHeader};

#[test]
fn one_limit_covers_every_variant() {
    let mut item = drop_of(&[5, 5, 5], 1);
    assert_eq!(
        buy(&mut item, 0, "ann", Some("a1"), None, NOW),
        Ok(Deduction::Bought { remaining: 4 })
    );
    assert_eq!(
        buy(&mut item, 1, "ann", Some("a2"), None, NOW),
        Ok(Deduction::LimitExceeded)
    );
    // The same request id again is the same purchase, in its variant...
    assert_eq!(
        buy(&mut item, 0, "ann", Some("a1"), None, NOW),
        Ok(Deduction::Replayed { remaining: 4 })
    );
    // ... and names no purchase of another.
    assert_eq!(
        buy(&mut item, 2, "ann", Some("a1"), None, NOW),
        Err(ItemError::RequestMismatch)
    );
    assert_eq!(item.total_bought_at(b"ann", NOW), 1);
    assert_eq!(item.total_stats_at(NOW).stock, 14);
    // Refunded, the pair frees the limit for another size.
    let part = item.variant_mut(0).unwrap();
    assert_eq!(part.refund(b"a1"), Ok(1));
    assert_eq!(
        buy(&mut item, 2, "ann", Some("a3"), None, NOW),
        Ok(Deduction::Bought { remaining: 4 })
    );
}

#[test]
fn a_lapsed_hold_frees_the_limit_in_every_variant() {
    let mut item = drop_of(&[1, 1], 1);
    assert_eq!(
        buy(&mut item, 0, "ann", Some("h1"), Some(NOW + 10), NOW),
        Ok(Deduction::Bought { remaining: 0 })
    );
    assert_eq!(
        buy(&mut item, 1, "ann", Some("h2"), Some(NOW + 10), NOW + 9),
        Ok(Deduction::LimitExceeded)
    );
    // At the deadline the hold counts as given back, swept or not.
    assert_eq!(
        buy(&mut item, 1, "ann", Some("h2"), Some(NOW + 100), NOW + 10),
        Ok(Deduction::Bought { remaining: 0 })
    );
    assert_eq!(item.total_bought_at(b"ann", NOW + 10), 1);
    assert_eq!(item.total_stats_at(NOW + 10).stock, 1);
}

#[test]
fn a_variant_keeps_its_own_limit_too() {
    let specs = [
        VariantSpec {
            name: b"s",
            stock: Stock::Limited(10),
            limit: 1,
        },
        VariantSpec {
            name: b"m",
            stock: Stock::Unlimited,
            limit: 0,
        },
    ];
    let mut item = SaleItem::with_variants(&specs, 3).unwrap();
    assert_eq!(
        buy(&mut item, 0, "ann", None, None, NOW),
        Ok(Deduction::Bought { remaining: 9 })
    );
    assert_eq!(
        buy(&mut item, 0, "ann", None, None, NOW),
        Ok(Deduction::LimitExceeded)
    );
    for _ in 0..2 {
        assert!(matches!(
            buy(&mut item, 1, "ann", None, None, NOW),
            Ok(Deduction::Bought { .. })
        ));
    }
    assert_eq!(
        buy(&mut item, 1, "ann", None, None, NOW),
        Ok(Deduction::LimitExceeded)
    );
    let stats = item.total_stats_at(NOW);
    assert!(stats.unlimited);
    assert_eq!(stats.stock, crate::sale_item::UNLIMITED_STOCK);
}

#[test]
fn bad_variants_are_refused() {
    let spec = |name: &'static [u8]| VariantSpec {
        name,
        stock: Stock::Limited(1),
        limit: 0,
    };
    assert_eq!(
        SaleItem::with_variants(&[], 0).err(),
        Some(VariantError::Count)
    );
    assert_eq!(
        SaleItem::with_variants(&[spec(b"a"), spec(b"a")], 0).err(),
        Some(VariantError::Repeated)
    );
    assert_eq!(
        SaleItem::with_variants(&[spec(b"")], 0).err(),
        Some(VariantError::Name)
    );
    let many: Vec<String> = (0..=MAX_VARIANTS).map(|n| n.to_string()).collect();
    let specs: Vec<VariantSpec> = many
        .iter()
        .map(|name| VariantSpec {
            name: name.as_bytes(),
            stock: Stock::Limited(1),
            limit: 0,
        })
        .collect();
    assert_eq!(
        SaleItem::with_variants(&specs, 0).err(),
        Some(VariantError::Count)
    );
    assert!(SaleItem::with_variants(&specs[..MAX_VARIANTS], 0).is_ok());
}

#[test]
fn an_item_with_variants_saves_and_loads_whole_or_chunk_by_chunk() {
    let mut item = drop_of(&[3, 2000, 4], 2);
    for n in 0..1500 {
        let user = format!("u{n}");
        let id = format!("r{n}");
        let hold = (n % 3 == 0).then_some(NOW + 1000);
        buy(&mut item, 1, &user, Some(&id), hold, NOW).unwrap();
    }
    buy(&mut item, 0, "u1", Some("x"), None, NOW).unwrap();
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    item.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    assert!(chunks.len() > 4, "a variant's records span chunks");
    let loaded = load(&chunks).unwrap();
    assert_eq!(loaded, item);
    assert_eq!(loaded.variant_label(), None);
    assert_eq!(loaded.variant(1).unwrap().variant_label(), Some(&b"41"[..]));
    assert_eq!(load_chunk_by_chunk(&chunks).unwrap(), item);
    // Cut short anywhere, it is not complete.
    for cut in 1..chunks.len() {
        assert!(load(&chunks[..cut]).is_err(), "cut at {cut}");
        assert!(load_chunk_by_chunk(&chunks[..cut]).is_err(), "cut at {cut}");
    }
}

/// The chunks of `item` with the chunks of its variant `index` replaced by
/// those of `other`'s.
fn spliced(item: &SaleItem, index: usize, other: &SaleItem) -> Vec<Vec<u8>> {
    let mut chunks = vec![item.encode_variants_header()];
    for (place, variant) in item.variants().iter().enumerate() {
        let source = if place == index {
            other.variant(index).unwrap()
        } else {
            &*variant.item
        };
        source.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    }
    chunks
}

#[test]
fn a_load_refuses_variants_that_disagree() {
    // Each item alone is a sale some sequence of calls makes; spliced,
    // one request id would name two purchases.
    let mut first = drop_of(&[5, 5], 0);
    buy(&mut first, 0, "ann", Some("r1"), None, NOW).unwrap();
    let mut second = drop_of(&[5, 5], 0);
    buy(&mut second, 1, "bob", Some("r1"), None, NOW).unwrap();
    let chunks = spliced(&first, 1, &second);
    assert_eq!(
        load(&chunks).err(),
        Some(DecodeError("request id in two variants"))
    );
    assert!(load_chunk_by_chunk(&chunks).is_err());
    // And one buyer would hold 2 under a limit of 1.
    let mut first = drop_of(&[5, 5], 1);
    buy(&mut first, 0, "ann", None, None, NOW).unwrap();
    let mut second = drop_of(&[5, 5], 1);
    buy(&mut second, 1, "ann", None, None, NOW).unwrap();
    assert_eq!(
        load(&spliced(&first, 1, &second)).err(),
        Some(DecodeError(
            "buyer holds more than the limit across variants"
        ))
    );
    // And one transfer id would name two transfers.
    let take = |item: &mut SaleItem, index: usize| {
        let part = item.variant_mut(index).unwrap();
        let verdict = part
            .judge_take(crate::sale_item::Take {
                transfer_id: b"t1",
                requested: 2,
                destination: None,
                decided: None,
            })
            .unwrap();
        let Verdict::Change(change) = verdict else {
            panic!("nothing taken");
        };
        part.apply(&[], change);
    };
    let mut first = drop_of(&[5, 5], 0);
    take(&mut first, 0);
    assert!(save_and_load(&first).is_ok());
    let mut second = drop_of(&[5, 5], 0);
    take(&mut second, 1);
    let chunks = spliced(&first, 1, &second);
    assert_eq!(
        load(&chunks).err(),
        Some(DecodeError("transfer id in two variants"))
    );
    assert!(load_chunk_by_chunk(&chunks).is_err());
    // A variants header inside a variant is no variant's header.
    let mut chunks = Vec::new();
    first.encode_chunks(|chunk| chunks.push(chunk.to_vec()));
    let header = chunks[0].clone();
    chunks.insert(1, header);
    assert!(load(&chunks).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the clicks, refunds and the passing of time: nobody holds
    /// more than the limit across variants (lapsed holds given back), no
    /// variant sells more than it has, and the item saves and loads equal.
    #[test]
    fn the_limit_across_variants_holds_under_any_sequence(
        stocks in proptest::collection::vec(0i64..6, 1..4),
        limit in 1i64..3,
        ops in proptest::collection::vec((0usize..4, 0u8..6, 0u8..3, 0u16..40, 0i64..30), 1..120),
    ) {
        let mut item = drop_of(&stocks, limit);
        let mut now = NOW;
        for (n, (variant, user, kind, request, step)) in ops.into_iter().enumerate() {
            now += step;
            let index = variant % stocks.len();
            let user = format!("u{user}");
            let request = format!("r{request}");
            match kind {
                0 | 1 => {
                    let hold = (kind == 1).then_some(now + 20);
                    let _ = buy(&mut item, index, &user, Some(&request), hold, now);
                }
                _ => {
                    if let Some(part) = item
                        .variant_of_request(request.as_bytes())
                        .and_then(|place| item.variant_mut(place))
                    {
                        if let Ok(Verdict::Change(change)) =
                            part.judge_refund(request.as_bytes(), Moment::Now(now))
                        {
                            let plan = part.settle_plan(&change, now, 0);
                            part.apply(&plan, change);
                        }
                    }
                }
            }
            for user in 0..6 {
                let user = format!("u{user}");
                prop_assert!(item.total_bought_at(user.as_bytes(), now) <= limit);
            }
            for (place, stock) in stocks.iter().enumerate() {
                let stats = item.variant(place).unwrap().stats_at(now);
                prop_assert!(stats.stock >= 0 && stats.stock <= *stock);
                prop_assert_eq!(
                    stats.stock + stats.sold - stats.refunded - stats.expired,
                    *stock
                );
            }
            if n % 16 == 0 {
                prop_assert_eq!(&save_and_load(&item).unwrap(), &item);
            }
        }
        prop_assert_eq!(&save_and_load(&item).unwrap(), &item);
        let _ = Change::Nothing;
    }
}

/// An import into variant `index` judged across variants, then in it, and
/// applied, as the module does.
fn import_into(
    item: &mut SaleItem,
    index: usize,
    records: Vec<ImportRecord>,
) -> Result<(), ImportError> {
    item.judge_import_across(index, &records)?;
    let Verdict::Change(change) = item.variants()[index].item.judge_import(records)? else {
        return Ok(());
    };
    let variant = item.variant_mut(index).unwrap();
    let plan = variant.settle_plan(&change, NOW, 0);
    variant.apply(&plan, change);
    Ok(())
}

fn purchase<'a>(id: &'a str, user: &'a str) -> ImportRecord<'a> {
    ImportRecord::Request {
        id: id.as_bytes(),
        user: user.as_bytes(),
        qty: 1,
        status: crate::sale_item::Status::Purchased,
        deadline: 0,
        reply: 1,
    }
}

#[test]
fn an_import_into_one_variant_respects_the_others() {
    let mut item = drop_of(&[3, 3], 1);
    import_into(&mut item, 0, vec![purchase("o-1", "ann")]).unwrap();
    // ann holds a unit of variant 0: the limit across variants refuses one
    // more of variant 1, and so does a request id variant 0 recorded.
    assert_eq!(
        import_into(&mut item, 1, vec![purchase("o-2", "ann")]),
        Err(ImportError::AboveLimit)
    );
    assert_eq!(
        import_into(&mut item, 1, vec![purchase("o-1", "bob")]),
        Err(ImportError::DuplicateRequest)
    );
    // Two records of one buyer in one call count together.
    assert_eq!(
        import_into(
            &mut item,
            1,
            vec![
                ImportRecord::Buyer {
                    user: b"cy",
                    units: 1
                },
                purchase("o-3", "cy")
            ]
        ),
        Err(ImportError::AboveLimit)
    );
    assert_eq!(
        item.variants()[1].item.remaining(),
        3,
        "refusals change nothing"
    );
    import_into(&mut item, 1, vec![purchase("o-3", "bob")]).unwrap();
    assert_eq!(item.variants()[1].item.bought(b"bob"), 1);
    // The imported item counts across variants as sales would: ann is at
    // the limit in variant 1 too, and the whole item loads again.
    assert_eq!(
        buy(&mut item, 1, "ann", Some("o-4"), None, NOW),
        Ok(Deduction::LimitExceeded)
    );
    assert!(save_and_load(&item).is_ok());
}
