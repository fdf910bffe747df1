/** The page's hash routes: the route in the address, a link to one, and the hook that follows it. */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  readonly page: string;
  readonly arg: string;
  readonly params: URLSearchParams;
}

function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', search = ''] = hash.split('?');
  const [page = '', ...rest] = path.split('/');
  return { page, arg: decodeURIComponent(rest.join('/')), params: new URLSearchParams(search) };
}

export function href(page: string, arg?: string, params: Record<string, string | undefined> = {}): string {
  const entries = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '');
  const search = entries.length > 0 ? `?${new URLSearchParams(entries).toString()}` : '';
  return `#/${page}${arg !== undefined ? `/${encodeURIComponent(arg)}` : ''}${search}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
