#!/usr/bin/env node
// Regenerates tests/unit/url/data/resolve_corpus.json: (base, input) pairs
// that a crawler meets in real markup, with the expected serialization from
// Node's built-in WHATWG URL class (`new URL(input, base).href`, or "invalid"
// when it throws). The C++ parser must agree (tests/unit/url/url_corpus_test.cc).
//
// Refresh: node tools/update-url-corpus.js > tests/unit/url/data/resolve_corpus.json
'use strict';

// Bases: a typical page, a directory with a port, userinfo + query, an IPv4
// host, an IDN host with a unicode path, an IPv6 host.
const bases = [
  'https://example.com/dir/page.html?x=1#top',
  'http://Example.COM:8080/a/b/c/',
  'https://user:pw@sub.example.org/path/to/file?q',
  'http://192.168.0.1/index.php',
  'https://例え.jp/フォルダ/ページ',
  'http://[::1]:8080/x/y',
];

// Relative (or maybe-relative) hrefs, each resolved against every base.
const relatives = [
  '', '#', '#frag', '?', '?q=1', '?q=1#f', 'a', 'a/b', './a', '../a',
  '../../a', '../../../../../a', '/a', '/', '//other.example/x',
  '//other.example', '///x', '\\\\other.example\\x', '\\a', 'a\\b', '.', '..',
  './', '../', '/./', '/../', 'a/./b/../c', 'a/%2e%2e/b', '%2e', '%2e%2E/x',
  'a/.%2e/b', 'a?b#c', ' a b ', '\ta\nb\rc', 'a#b c', 'a?b c', 'café',
  '日本/語', '?q=日本', '#ü', 'a:b', 'a/b:c', './a:b', 'javascript:void(0)',
  'mailto:x@y.example', 'http:x', 'https:x', 'http:/x', 'http://x', '//',
  '/\\x', '%zz', 'a%', 'index.html?a=1&b=2', 'page.php?id=1&sid=abc',
  ';jsessionid=1', 'a;b=c/d', '~user/', '%7Euser', '?#', '#?', '..a', 'a..',
  '.../x', 'a/..%2f', 'foo bar.html', '<a>', '{x}', 'a|b', 'a^b', 'a`b',
  "'quoted'", '"dq"', 'a\u0000b', 'search?q=a+b&lang=en', 'img/logo.png',
  '/path/with%20space', '?utm_source=x&utm_medium=y', 'dir/',
];

// Absolute hrefs (the base matters only when the input turns out relative).
const absolutes = [
  // scheme and host case, default ports
  'HTTP://EXAMPLE.COM/Path', 'HtTpS://WwW.Example.Com:443/', 'http://example.com',
  'http://example.com:80/', 'https://example.com:443/x', 'http://example.com:443/',
  'https://example.com:80/', 'http://example.com:0/', 'http://example.com:65535/',
  'http://example.com:65536/', 'http://example.com:/', 'http://example.com:8a/',
  'https://example.com:0443/', 'http://example.com:99999999999999999999/',
  'http://example.com:80:80/', 'http://example.com:+80/', 'http://example.com: 80/',
  // IPv4
  'http://192.168.0.1/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://2130706433/',
  'http://127.1/', 'http://127.0.1/', 'http://1.2.3.4.5/', 'http://256.0.0.1/',
  'http://4294967295/', 'http://4294967296/', 'http://0x100000000/', 'http://1.2.3.09/',
  'http://1.2.3.4./', 'http://192.168.1.1.', 'http://09.1/', 'http://0x/',
  'http://1.2.3.0x1g/', 'http://foo.1/', 'http://foo.0x10/', 'http://999999999999999999999.1/',
  'http://0.0.0.0/', 'http://0x7F.0X0.00.01/', 'http://1.2.3.4.5.6/', 'http://1..2/',
  'http://.1.2.3.4/', 'http://%31%32%37.0.0.1/', 'http://1.2.3/', 'http://0xffffffff/',
  'http://00000000000000000000001.2.3.4/', 'http://1.2.3.256/', 'http://1.2.65536/',
  // IPv6
  'http://[::1]/', 'http://[::]/', 'http://[2001:db8::1]:8080/', 'http://[2001:DB8:0:0:0:0:0:1]/',
  'http://[::ffff:192.168.0.1]/', 'http://[::ffff:c0a8:1]/', 'http://[1:2:3:4:5:6:7:8]/',
  'http://[1:2:3:4:5:6:7:8:9]/', 'http://[::1/', 'http://[:1]/', 'http://[1::2::3]/',
  'http://[0:0:0:0:0:0:13.1.68.3]/', 'http://[fe80::1%25eth0]/', 'http://[2001:db8:0:0:1:0:0:1]/',
  'http://[1:0:0:2::3:0]/', 'http://[::1.2.3.4x]/', 'http://[::1]:443/', 'https://[::1]:443/',
  'http://[::127.0.0.1]/', 'http://[1:2::3:4:5:6:7]/', 'http://[::1.2.3]/', 'http://[::1.2.3.04]/',
  'http://[00001::]/', 'http://[ffff::]/', 'http://[::1]x/', 'http://[0::0:0]/', 'http://[1:0::]/',
  // IDN and odd hosts
  'http://Bücher.de/', 'https://例え.jp/', 'http://xn--bcher-kva.de/', 'http://XN--BCHER-KVA.DE/',
  'http://münchen。de/', 'http://ﬁ.com/', 'http://ＥＸＡＭＰＬＥ.com/', 'http://faß.de/',
  'http://☃.net/', 'http://xn--abc.com/', 'http://ex%41mple.com/', 'http://ex%zzample.com/',
  'http://exa mple.com/', 'http://exa<mple.com/', 'http://a_b.example/', 'http://-foo-.example/',
  'http://café.fr/', 'http://пример.рф/', 'http://日本.jp./', 'http://example.com./',
  'http://example..com/', 'http://%E4%BE%8B.jp/', 'http://a\u00ADb.com/', 'http://straße.de/',
  'http://ÉCOLE.fr/', 'http://www.食狮.中国/', 'http://xn--n3h.net/', 'http://ab--cd.example/',
  'http://foo$bar.example/', 'http://foo%25bar.example/', 'http://foo^bar/', 'http://foo|bar/',
  'http://a.b.c.d.e.f.example.co.uk/', 'http://localhost:3000/', 'http://LOCALHOST/',
  'http://' + 'a'.repeat(70) + '.example/', 'http://ex\u0000ample.com/',
  // userinfo
  'http://user:pass@example.com/', 'http://user@example.com/', 'http://:pass@example.com/',
  'http://user:@example.com/', 'http://@example.com/', 'http://a@b@example.com/',
  'http://us er:p@ss@example.com/', 'http://user:pa:ss@example.com/',
  'http://user%40x:p%3A@example.com/', 'http://@/', 'http://user@/', 'http://user@:80/',
  'http://üser:päss@example.com/', 'http://u;s=e[r]@example.com/',
  // whitespace and controls
  '  http://example.com/  ', '\thttp://exa\nmple.com/p\ra\tth', 'http://example.com/a b',
  '\u0000http://example.com/\u001f', 'http://example.com/\u007f', '\u000c http://example.com/x',
  'http://example.com/ ?q= #f ', 'http://example.com/a\u001fb?c\u001fd#e\u001ff',
  // percent-encoding
  'http://example.com/%7Euser', 'http://example.com/%7euser', 'http://example.com/%zz',
  'http://example.com/%', 'http://example.com/%2', 'http://example.com/a%2Fb',
  'http://example.com/%2e%2E/x', 'http://example.com/a/%2e/b', 'http://example.com/a/.%2e/b',
  'http://example.com/?q=%zz', 'http://example.com/?q=a b', 'http://example.com/?q=\'"<>`',
  'http://example.com/#a b<>`"', 'http://example.com/{}|^`', 'http://example.com/a%00b',
  'http://example.com/%C3%A9', 'http://example.com/?a=%26&b=%3D',
  // unicode paths and queries
  'http://example.com/café', 'http://example.com/日本語?q=日本語#日本語',
  'http://example.com/?q=ü', 'http://example.com/\u{1F600}', 'http://example.com/\uFEFFx',
  'https://ja.wikipedia.org/wiki/東京', 'https://ru.wikipedia.org/wiki/Москва?action=edit',
  // other schemes
  'javascript:alert(1)', 'javascript:void(0)', 'JavaScript:void(0);', 'javascript:',
  'mailto:someone@example.com', 'mailto:a@b.c?subject=Hi there', 'MAILTO:X@Y.COM',
  'tel:+1-555-0100', 'tel:+1 (555) 0100', 'data:text/plain,hello world',
  'data:image/png;base64,iVBOR#x', 'data:text/html,<b>x</b>', 'ftp://ftp.example.com/pub/file.txt',
  'ftp://example.com:21/', 'ftp://user@ftp.example.com:2121/x', 'file:///etc/passwd',
  'file://localhost/etc/hosts', 'file:///C:/Windows/', 'file:c:\\foo\\bar', 'file://host/share',
  'FILE:///x/../../y', 'file:///C|/x', 'ws://example.com:80/chat', 'wss://example.com/',
  'about:blank', 'urn:isbn:0451450523', 'sms:+15555550100?body=hi', 'git+ssh://git@github.com/x.git',
  'foo://EXAMPLE.com/p', 'foo://host:99999', 'web+demo:/.//not-a-host/', 'foo://ho st/',
  'foo://h/a/../b', 'foo:/a/./b', 'foo:', 'foo://', 'blob:https://example.com/uuid',
  'view-source:http://example.com/', 'chrome://settings', 'skype:echo123?call', 'magnet:?xt=urn:btih:abc',
  'intent://scan/#Intent;scheme=zxing;end', 'HTTP+X://y', '1http://x', 'a!b://x',
  // slashes and backslashes
  'http:\\\\example.com\\a\\b', 'http:/example.com/', 'http:example.com/', 'https:/\\example.com',
  'http:////example.com///a', 'https:\\example.com', 'http://example.com\\foo', 'http://example.com//a//b',
  // structure
  'http://example.com?', 'http://example.com#', 'http://example.com/?#', 'http://example.com/#?',
  'http://example.com/path?q=1&utm_source=x#frag', 'http://example.com/a/b/../../../../c',
  'http://example.com/./a/./b/.', 'http://example.com/a/b/..', 'http://example.com/;jsessionid=ABC?x=1',
  'https://www.example.com/index.html?PHPSESSID=abc', 'http:', 'http://', 'http:///example.com/',
  'https://', 'http://exa#mple.com/', 'http://ex ample.com/', 'http://example.com\u3000/',
  'http://example.com/' + 'a/'.repeat(600), 'http://example.com/?' + 'k=v&'.repeat(300),
  'http://example.com/a?b?c#d#e', 'http://example.com/..', 'http://example.com/../../x',
  'http://example.com/a/b/c/./../../g', 'http://example.com/%2e', 'http://example.com/.%2E',
  'http://example.com/a/..;b', 'http://example.com/a/...', 'http://example.com/?a=1&a=2&',
  'https://www.google.com/search?q=c%2B%2B+url&oq=c%2B%2B', 'https://example.com/p?fbclid=IwAR0x&gclid=abc',
];

// A few bases of other kinds, each with a small set of hrefs.
const otherBases = [
  ['mailto:x@y.example', ['#f', 'x', '', '?q', '//h/x', 'http://ok.example/']],
  ['data:text/plain,x', ['#a', 'y', '']],
  ['file:///C:/dir/file.txt', ['x', '/y', '//h/z', '..', '../../..', 'D:/q', '?q', '#f', '', '\\\\srv\\s', '/C:/w', 'file:x']],
  ['foo://host/a/b', ['c', '../c', '/c', '//h2/c', '?q', '#f', '', '\\c', 'c/./d/..']],
  ['foo:/a/b', ['c', '..', '../..', '//x', './/x']],
  ['https://example.com', ['a', '../a', '?q', '']],
];

function resolve(input, base) {
  try {
    return new URL(input, base).href;
  } catch (e) {
    return 'invalid';
  }
}

const out = [];
for (const base of bases) {
  for (const input of relatives) out.push({base, input, href: resolve(input, base)});
}
for (const input of absolutes) {
  const base = bases[0];
  out.push({base, input, href: resolve(input, base)});
}
for (const [base, inputs] of otherBases) {
  for (const input of inputs) out.push({base, input, href: resolve(input, base)});
}
// No base: relative hrefs fail, absolute ones parse.
for (const input of ['a', '/a', '//example.com/', 'http://example.com/', '', '#x']) {
  out.push({base: '', input, href: resolve(input, undefined)});
}

process.stdout.write('[\n' + out.map((e) => '  ' + JSON.stringify(e)).join(',\n') + '\n]\n');
