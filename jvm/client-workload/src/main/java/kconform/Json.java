package kconform;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The JSON this protocol needs: objects, arrays, strings, integers, booleans and null. */
final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    static Object parse(String text) {
        Json json = new Json(text);
        Object value = json.value();
        json.skipSpace();
        if (json.at != text.length())
            throw json.error("trailing characters");
        return value;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object value) {
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object value) {
        return (List<Object>) value;
    }

    private Object value() {
        skipSpace();
        if (at >= text.length())
            throw error("unexpected end");
        char c = text.charAt(at);
        if (c == '{')
            return parseObject();
        if (c == '[')
            return parseArray();
        if (c == '"')
            return parseString();
        if (text.startsWith("null", at)) {
            at += 4;
            return null;
        }
        if (text.startsWith("true", at)) {
            at += 4;
            return Boolean.TRUE;
        }
        if (text.startsWith("false", at)) {
            at += 5;
            return Boolean.FALSE;
        }
        int start = at;
        if (c == '-')
            at++;
        while (at < text.length() && Character.isDigit(text.charAt(at)))
            at++;
        if (start == at || (c == '-' && at == start + 1))
            throw error("unexpected character");
        return Long.parseLong(text.substring(start, at));
    }

    private Map<String, Object> parseObject() {
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        skipSpace();
        if (peek() == '}') {
            at++;
            return map;
        }
        while (true) {
            skipSpace();
            String key = parseString();
            skipSpace();
            expect(':');
            map.put(key, value());
            skipSpace();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private List<Object> parseArray() {
        List<Object> list = new ArrayList<>();
        at++;
        skipSpace();
        if (peek() == ']') {
            at++;
            return list;
        }
        while (true) {
            list.add(value());
            skipSpace();
            if (peek() == ',') {
                at++;
                continue;
            }
            expect(']');
            return list;
        }
    }

    private String parseString() {
        expect('"');
        StringBuilder s = new StringBuilder();
        while (true) {
            char c = text.charAt(at++);
            if (c == '"')
                return s.toString();
            if (c != '\\') {
                s.append(c);
                continue;
            }
            char e = text.charAt(at++);
            switch (e) {
                case 'u':
                    s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                    break;
                case 'n': s.append('\n'); break;
                case 't': s.append('\t'); break;
                case 'r': s.append('\r'); break;
                case 'b': s.append('\b'); break;
                case 'f': s.append('\f'); break;
                default: s.append(e);
            }
        }
    }

    private char peek() {
        if (at >= text.length())
            throw error("unexpected end");
        return text.charAt(at);
    }

    private void expect(char c) {
        if (peek() != c)
            throw error("expected '" + c + "'");
        at++;
    }

    private void skipSpace() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at)))
            at++;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("bad JSON at " + at + ": " + what);
    }

    /** JSON text of maps, lists, strings, numbers and null; every non-ASCII character escaped. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            quote((String) value, out);
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map) {
            out.append('{');
            String sep = "";
            for (Map.Entry<String, Object> e : object(value).entrySet()) {
                out.append(sep);
                quote(e.getKey(), out);
                out.append(':');
                write(e.getValue(), out);
                sep = ",";
            }
            out.append('}');
        } else {
            out.append('[');
            String sep = "";
            for (Object item : list(value)) {
                out.append(sep);
                write(item, out);
                sep = ",";
            }
            out.append(']');
        }
    }

    private static void quote(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\')
                out.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e)
                out.append(String.format("\\u%04x", (int) c));
            else
                out.append(c);
        }
        out.append('"');
    }
}
