//! The page around the sections: its head (with the style) and its end (with
//! the script that checks the charts were laid out).

use std::fmt::Write as _;

/// The page's only style.
const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:820px;color:#111827}\
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}figure{margin:1rem 0}figcaption{font-size:.9rem;color:#374151;margin-bottom:.3rem}\
table{border-collapse:collapse;font-size:.8rem;font-variant-numeric:tabular-nums}td,th{border:1px solid #e5e7eb;padding:2px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}.meta{color:#6b7280;font-size:.85rem;overflow-wrap:anywhere}\
svg.chart{max-width:100%;height:auto}.scroll,table{overflow-x:auto;max-width:100%}table{display:block}";

/// Checks, after load, that every chart has a size: the page's own smoke test.
const SCRIPT: &str = "window.addEventListener('error',function(e){document.body.dataset.status='error: '+e.message;});\
window.addEventListener('load',function(){var c=document.querySelectorAll('svg.chart');var ok=c.length>0;\
for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();if(!(r.width>0&&r.height>0)){ok=false;}}\
if(document.body.dataset.status===undefined){document.body.dataset.status=ok?'ok':'empty chart';}\
document.body.dataset.charts=String(c.length);\
document.body.dataset.fits=String(document.documentElement.scrollWidth<=window.innerWidth+1);});";

/// The page up to its title.
pub(crate) fn head() -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = writeln!(out, "<title>agentsim reliability report</title><style>{STYLE}</style></head><body>");
    out.push_str("<h1>agentsim reliability report</h1>\n");
    out
}

/// The script and the end of the page.
pub(crate) fn end(out: &mut String) {
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
}
